"""The built-in detectors: one precompiled regex each, plus the checksum or context test
that keeps it from firing on order numbers, dates, prices and ordinary prose."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime

PHONE = "PHONE"
EMAIL = "EMAIL"
CARD = "CARD"
ID_NUMBER = "ID_NUMBER"
BANK_ACCOUNT = "BANK_ACCOUNT"
SECRET = "SECRET"  # noqa: S105 - a tag name, not a credential

Check = Callable[[re.Match[str]], bool]


@dataclass(frozen=True, slots=True)
class Detector:
    """A pattern and its tag. Only the ``value`` group is masked when the pattern has one,
    so lead-in words ("my password is") survive; the whole match still counts as the
    detection's length when overlapping detections compete."""

    tag: str
    regex: re.Pattern[str]
    rank: int  # breaks ties between equally long overlapping matches; lower wins
    check: Check | None = None


# A tag we already wrote. Masked text is scanned again (idempotency), and nothing may
# match inside one of these.
TAG_TOKEN = re.compile(r"\[[A-Z][A-Z0-9_]*\]")

# Full-width ASCII (１３８, ＠, ：) and odd spaces map one-to-one onto ASCII, so offsets
# in the folded copy are offsets in the original.
_FOLD = str.maketrans({0x3000: " ", 0x00A0: " ", **{0xFF01 + i: chr(0x21 + i) for i in range(94)}})


def fold(text: str) -> str:
    """The copy of ``text`` the detectors scan: same length, full-width forms as ASCII."""
    return text if text.isascii() else text.translate(_FOLD)


def value_span(match: re.Match[str]) -> tuple[int, int]:
    """The part of ``match`` to mask: its ``value`` group if the pattern has one."""
    return match.span("value") if "value" in match.re.groupindex else match.span()


def _value(match: re.Match[str]) -> str:
    start, end = value_span(match)
    return match.string[start:end]


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


# --- checksums ------------------------------------------------------------------------


def luhn_ok(digits: str) -> bool:
    """The Luhn (mod 10) check every payment card number carries."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        digit = int(char)
        if position % 2:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return total % 10 == 0


_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK_CHARS = "10X98765432"


def resident_id_ok(text: str) -> bool:
    """GB 11643 check character and a birth date between 1900 and today."""
    code = text.replace(" ", "").upper()
    if len(code) != 18 or not code[:17].isdigit():
        return False
    total = sum(int(char) * weight for char, weight in zip(code[:17], _ID_WEIGHTS, strict=True))
    if _ID_CHECK_CHARS[total % 11] != code[17]:
        return False
    try:
        born = date(int(code[6:10]), int(code[10:12]), int(code[12:14]))
    except ValueError:  # 0230 and friends
        return False
    return date(1900, 1, 1) <= born <= datetime.now(UTC).date()


# ISO 13616 country code -> IBAN length; the length check makes a random mod-97 pass on a
# product code or licence plate much less likely.
_IBAN_TABLE = (
    "AD24 AE23 AL28 AT20 AZ28 BA20 BE16 BG22 BH22 BR29 BY28 CH21 CR22 CY28 CZ24 DE22 "
    "DK18 DO28 EE20 EG29 ES24 FI18 FO18 FR27 GB22 GE22 GI23 GL18 GR27 GT28 HR21 HU28 "
    "IE22 IL23 IQ23 IS26 IT27 JO30 KW30 KZ20 LB28 LC32 LI21 LT20 LU20 LV21 MC27 MD24 "
    "ME22 MK19 MR27 MT31 MU30 NL18 NO15 PK24 PL28 PS29 PT25 QA29 RO24 RS22 SA24 SC31 "
    "SE24 SI19 SK24 SM27 ST25 SV28 TL23 TN24 TR26 UA29 VA22 VG24 XK20"
)
_IBAN_LENGTHS = {entry[:2]: int(entry[2:]) for entry in _IBAN_TABLE.split()}


def iban_ok(text: str) -> bool:
    """Known country, the right length for it, and ISO 7064 mod 97-10."""
    code = text.replace(" ", "")
    if _IBAN_LENGTHS.get(code[:2]) != len(code):
        return False
    rearranged = code[4:] + code[:4]
    return int("".join(str(int(char, 36)) for char in rearranged)) % 97 == 1


# --- checks with context ----------------------------------------------------------------

# A number introduced as an order, tracking or invoice number is not personal data even
# when it happens to look like a phone or pass Luhn.
_ORDER_CONTEXT = re.compile(
    r"""(?:订单|单号|运单|编号|流水|发票|快递|物流|工单
        |order|tracking|invoice|reference|ref|serial|ticket|sku)
    (?:号码|号|码)?(?:\s{0,8}(?:number|num|no\.?|id|\#))?\s{0,8}(?:[:=\#]|是|为|is)?\s{0,8}$""",
    re.ASCII | re.IGNORECASE | re.VERBOSE,
)


def _not_an_order_number(match: re.Match[str]) -> bool:
    start = value_span(match)[0]
    return _ORDER_CONTEXT.search(match.string, max(0, start - 24), start) is None


def _card_check(match: re.Match[str]) -> bool:
    digits = _digits(match.group())
    return 13 <= len(digits) <= 19 and luhn_ok(digits) and _not_an_order_number(match)


def _intl_phone_check(match: re.Match[str]) -> bool:
    text = match.group()
    balanced = text.count("(") == text.count(")") <= 1
    tidy = "  " not in text and "--" not in text
    # Nine digits is the shortest real +CC number we care about; fewer is a score or a range.
    return 9 <= len(_digits(text)) <= 15 and balanced and tidy and _not_an_order_number(match)


def _bank_account_check(match: re.Match[str]) -> bool:
    # A card or ID number after "卡号" keeps its more specific tag.
    value = _value(match)
    digits = _digits(value)
    return not (_CARD.fullmatch(value) and luhn_ok(digits)) and not resident_id_ok(digits)


def _has_digit_and_letter(match: re.Match[str]) -> bool:
    value = _value(match)
    return any(ch.isdigit() for ch in value) and any(ch.isalpha() for ch in value)


def _has_digit(match: re.Match[str]) -> bool:
    return any(ch.isdigit() for ch in match.group())


# Words that follow "password is" / "password:" in prose, not passwords.
_PROSE_WORDS = """a about access actually again all also always an and any anyone at be being
    blank but can cannot case change changed correct default different does empty enter
    encrypted everyone expired field fine for forgotten from get hashed have help her here
    hidden him hint how in incorrect invalid is it just keep length log login long lost me
    manager missing my needed new no nobody none not now null of ok okay old on open or our
    please policy protected recovery remember required reset right safe same saved secure
    sensitive set short should sign so someone something still stored strong that the their
    them there this to too unlock updated us use very was weak what when where which who why
    will with written wrong you your"""
_PROSE_AFTER_PASSWORD = frozenset(_PROSE_WORDS.split())


def _password_check(match: re.Match[str]) -> bool:
    value = _value(match)
    return len(value) >= 3 and not (value.isalpha() and value.lower() in _PROSE_AFTER_PASSWORD)


# --- the detectors ----------------------------------------------------------------------

# Every repeat that another repeat could share characters with is bounded (whitespace
# in lead-ins to 8, values to their longest real length): a regex with bounded repeats
# does constant work per starting position, so each detector is linear in the text.
# The unbounded ones left cannot overlap their neighbours (tests/unit/test_regex_linear.py
# attacks every pattern; docs/decisions/0033-linear-time-patterns.md).

# Numbers must stand alone: no letter or digit next to them, and not continued by another
# digit group ("4111 1111 ..."), a decimal part or a date part.
_ALONE_START = r"(?<![A-Za-z0-9_])(?<![0-9][ .,-])"
_ALONE_END = r"(?![ .,-]?[0-9])(?![A-Za-z0-9_])"
_FLAGS = re.ASCII | re.VERBOSE

_CARD = re.compile(
    _ALONE_START + r"(?:[3-6][0-9]|2[2-7])[0-9]{2}(?:[ -]?[0-9]){9,15}" + _ALONE_END, _FLAGS
)

_RESIDENT_ID = re.compile(
    _ALONE_START
    + r"""(?:1[1-5]|2[1-3]|3[1-7]|4[1-6]|5[0-4]|6[1-5]|71|8[1-3]|91)[0-9]{4}[ ]?  # region
    (?:18|19|20)[0-9]{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01])[ ]?  # birth date
    [0-9]{3}[0-9Xx]"""
    + _ALONE_END,
    _FLAGS,
)

_IBAN = re.compile(
    r"""(?<![A-Za-z0-9_])[A-Z]{2}[0-9]{2}
    (?:[A-Z0-9]{11,30}|(?:[ ][A-Z0-9]{4}){2,7}(?:[ ][A-Z0-9]{1,3})?)(?![A-Za-z0-9_])""",
    _FLAGS,
)

_BANK_ACCOUNT = re.compile(
    r"""(?:账号|帐号|账户|帐户|卡号|户号|银行卡
        |(?<![A-Za-z])(?:account|acct|a/c)(?:[ ]?(?:number|num|no\.?|\#))?)
    (?:号码|号)?\s{0,8}(?:[:=\#：]|是|为|is(?![A-Za-z]))?\s{0,8}
    (?P<value>[0-9](?:[ -]?[0-9]){15,20})"""
    + _ALONE_END,
    _FLAGS | re.IGNORECASE,
)

_EMAIL = re.compile(
    r"""(?<![A-Za-z0-9._%+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}
    @(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![A-Za-z0-9-])""",
    _FLAGS,
)

# Phones tolerate a neighbouring number after a space or comma (lists of phones), but
# not a decimal point or dash that would make them part of something else.
_CN_MOBILE = re.compile(
    r"""(?<![A-Za-z0-9_])(?<![0-9][.-])(?:\(?(?:\+|00)?86\)?[ -]?)?
    1[3-9][0-9](?:[ -]?[0-9]{4}){2}(?![.-]?[0-9])(?![A-Za-z0-9_])""",
    _FLAGS,
)

_INTL_PHONE = re.compile(r"(?<![A-Za-z0-9_+])\+[1-9][0-9 ()-]{6,22}[0-9](?![0-9])", _FLAGS)

_CN_LANDLINE = re.compile(
    _ALONE_START
    + r"""(?:\(0(?:10|2[0-9]|[3-9][0-9]{2})\)[ ]?|0(?:10|2[0-9]|[3-9][0-9]{2})-)
    [2-9][0-9]{6,7}"""
    + _ALONE_END,
    _FLAGS,
)

# Formats that announce themselves: OpenAI/Anthropic, Stripe, GitHub, GitLab, AWS access
# key ids, Slack, Google API keys, JWTs, PEM private keys.
_KNOWN_SECRET = re.compile(
    r"""(?<![A-Za-z0-9_-])(?:
        sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}
        |(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}
        |gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,}|glpat-[A-Za-z0-9_-]{20,}
        |(?:AKIA|ASIA)[A-Z0-9]{16}
        |xox[abposr]-[A-Za-z0-9-]{10,}
        |AIza[A-Za-z0-9_-]{35}
        |eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*
        |-----BEGIN[ ](?:[A-Z]+[ ])*PRIVATE[ ]KEY-----[\s\S]{1,8000}?
         -----END[ ](?:[A-Z]+[ ])*PRIVATE[ ]KEY-----
    )(?![A-Za-z0-9_-])""",
    _FLAGS,
)

_URL_CREDENTIALS = re.compile(
    r"""(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,15}://[^\s:/@]{0,64}:
    (?P<value>[^\s/@]{1,128})@[^\s/?\#@]{1,255}""",
    _FLAGS,
)

# A password value is printable ASCII and does not end in sentence punctuation.
_TYPED_VALUE = r"""["'“‘「]?(?P<value>[!-~]{0,255}[A-Za-z0-9!\#$%&*+/=@^_|~-])"""

_PASSWORD = re.compile(
    r"""(?:
        (?<![A-Za-z0-9])(?:pass(?:word|wd|code|phrase)|pwd)
        (?:\s{1,8}(?:for|of|to)(?:\s{1,8}[^\s:=：]{1,30}){1,3})?
        (?:\s{0,8}[:=：]\s{0,8}|\s{1,8}(?:is|was)(?:\s{1,8}(?:now|still|just|actually))?\s{0,8}[:：]?\s{0,8}
           |\s{1,8}(?:(?:changed|set|reset)\s{1,8})?to\s{1,8})
      |(?:密码|口令)\s{0,8}(?:是[:：]?|为|[:=：]|改成了?|改为|设置为|设为|换成了?)?\s{0,8}
    )"""
    + _TYPED_VALUE,
    _FLAGS | re.IGNORECASE,
)

# After "token" / "api key" / 密钥 only a long, machine-looking value counts.
_KEYWORD_SECRET = re.compile(
    r"""(?:
        (?<![A-Za-z0-9])(?:api[\s_-]?key|apikey|(?:access|refresh|auth|api|session)[\s_-]?token
          |token|client[\s_-]?secret|secret(?:[\s_-]?(?:access[\s_-]?)?key)?
          |access[\s_-]?key(?:[\s_-]?id)?|private[\s_-]?key|bearer|authorization)
        (?:\s{0,8}[:=：]\s{0,8}|\s{1,8}(?:is|was)\s{0,8}[:：]?\s{0,8}|\s{1,8})
      |(?:密钥|秘钥|私钥|令牌)\s{0,8}(?:是|为|[:=：])?\s{0,8}
    )["'“‘]?(?P<value>[A-Za-z0-9_\-+/=.~]{15,1023}[A-Za-z0-9=])""",
    _FLAGS | re.IGNORECASE,
)

BUILTIN_DETECTORS: tuple[Detector, ...] = (
    Detector(SECRET, _KNOWN_SECRET, 0, _has_digit),
    Detector(SECRET, _URL_CREDENTIALS, 0),
    Detector(ID_NUMBER, _RESIDENT_ID, 1, lambda m: resident_id_ok(m.group())),
    Detector(BANK_ACCOUNT, _IBAN, 1, lambda m: iban_ok(m.group())),
    Detector(CARD, _CARD, 2, _card_check),
    Detector(BANK_ACCOUNT, _BANK_ACCOUNT, 3, _bank_account_check),
    Detector(EMAIL, _EMAIL, 4),
    Detector(SECRET, _PASSWORD, 5, _password_check),
    Detector(SECRET, _KEYWORD_SECRET, 5, _has_digit_and_letter),
    Detector(PHONE, _CN_MOBILE, 6, _not_an_order_number),
    Detector(PHONE, _INTL_PHONE, 6, _intl_phone_check),
    Detector(PHONE, _CN_LANDLINE, 7, _not_an_order_number),
)
