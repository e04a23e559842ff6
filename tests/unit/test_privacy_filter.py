"""The privacy filter, table-driven: what it masks, what it must leave alone, and how it
treats tenant patterns. Card and ID numbers are synthetic, their check digits computed
here independently of the code under test."""

from __future__ import annotations

import dataclasses

import pytest

from tether.privacy.filter import MaskResult, PrivacyFilter, default_filter
from tether.privacy.tenant_patterns import MAX_EXTRA_PATTERNS, PatternRefused

# --- synthetic numbers with correct check digits -------------------------------------------


def with_luhn(payload: str) -> str:
    """Append the Luhn check digit."""
    total = 0
    for position, char in enumerate(reversed(payload)):
        digit = int(char) * (2 if position % 2 == 0 else 1)
        total += digit - 9 if digit > 9 else digit
    return payload + str((10 - total % 10) % 10)


def broken_luhn(number: str) -> str:
    """The same number with a wrong last digit."""
    return number[:-1] + str((int(number[-1]) + 1) % 10)


def with_id_check(first17: str) -> str:
    """Append the GB 11643 check character."""
    weights = [2 ** (17 - i) % 11 for i in range(17)]
    total = sum(int(char) * weight for char, weight in zip(first17, weights, strict=True))
    return first17 + "10X98765432"[total % 11]


def broken_id_check(number: str) -> str:
    return number[:-1] + ("0" if number[-1] != "0" else "1")


def grouped(number: str, size: int = 4, sep: str = " ") -> str:
    return sep.join(number[i : i + size] for i in range(0, len(number), size))


VISA = with_luhn("411111111111111")
UNIONPAY = with_luhn("622202100112345")
UNIONPAY_19 = with_luhn("622848001234567890")
MASTERCARD = with_luhn("510510510510510")
AMEX = with_luhn("37828224631000")
ID_BEIJING = with_id_check("11010519491231002")  # the sample in GB 11643 itself
ID_SHENZHEN = with_id_check("44030419900307123")
ID_SHANGHAI = with_id_check("31011520051120456")
ACCOUNT_NO_CARD = broken_luhn(with_luhn("622202134567890123"))  # 19 digits, fails Luhn

JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IlRlc3QifQ."
    "c2lnbmF0dXJlX25vdF9yZWFsXzEyMw"
)
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAfake0key1material2\n"
    "-----END RSA PRIVATE KEY-----"
)


def test_helpers_agree_with_published_samples() -> None:
    assert VISA == "4111111111111111"
    assert ID_BEIJING == "11010519491231002X"


# --- what is masked --------------------------------------------------------------------

MASKED: list[tuple[str, str, tuple[str, ...]]] = [
    # phones
    ("我的手机号是13812345678，有事打我", "我的手机号是[PHONE]，有事打我", ("PHONE",)),
    ("手机：139 8765 4321", "手机：[PHONE]", ("PHONE",)),
    ("联系电话 +86 150-1234-5678 张先生", "联系电话 [PHONE] 张先生", ("PHONE",)),
    ("微信同号0086 18600001111", "微信同号[PHONE]", ("PHONE",)),
    ("电话 13812345678 13998765432 都行", "电话 [PHONE] [PHONE] 都行", ("PHONE", "PHONE")),
    ("手机号：１３８１２３４５６７８", "手机号：[PHONE]", ("PHONE",)),
    ("Call me on +44 20 7946 0958 tonight.", "Call me on [PHONE] tonight.", ("PHONE",)),
    ("Office: +1 (415) 555-2671", "Office: [PHONE]", ("PHONE",)),
    ("my Tokyo number is +81 90-1234-5678", "my Tokyo number is [PHONE]", ("PHONE",)),
    ("公司座机010-62345678，分机找我", "公司座机[PHONE]，分机找我", ("PHONE",)),
    ("深圳办公室 (0755) 23456789", "深圳办公室 [PHONE]", ("PHONE",)),
    # e-mail
    ("邮箱是zhang.san@example.com，请查收", "邮箱是[EMAIL]，请查收", ("EMAIL",)),
    ("Write to Jane.Doe+news@mail.example.org.", "Write to [EMAIL].", ("EMAIL",)),
    ("我的QQ邮箱 13812345678@qq.com", "我的QQ邮箱 [EMAIL]", ("EMAIL",)),
    # payment cards
    (f"card {grouped(VISA)} exp 12/27", "card [CARD] exp 12/27", ("CARD",)),
    (f"信用卡{UNIONPAY}还款日是每月5号", "信用卡[CARD]还款日是每月5号", ("CARD",)),
    (f"卡号 {grouped(UNIONPAY_19)}", "卡号 [CARD]", ("CARD",)),
    (f"Mastercard {grouped(MASTERCARD, sep='-')} please", "Mastercard [CARD] please", ("CARD",)),
    (f"Amex {AMEX[:4]} {AMEX[4:10]} {AMEX[10:]}.", "Amex [CARD].", ("CARD",)),
    # resident ID numbers
    (f"身份证号 {ID_BEIJING}", "身份证号 [ID_NUMBER]", ("ID_NUMBER",)),
    (f"我的身份证是{ID_SHENZHEN}，请核对", "我的身份证是[ID_NUMBER]，请核对", ("ID_NUMBER",)),
    (f"ID number {ID_BEIJING.lower()} on file", "ID number [ID_NUMBER] on file", ("ID_NUMBER",)),
    (
        f"身份证 {ID_SHANGHAI[:6]} {ID_SHANGHAI[6:14]} {ID_SHANGHAI[14:]} 复印件",
        "身份证 [ID_NUMBER] 复印件",
        ("ID_NUMBER",),
    ),
    (f"账户 {ID_SHENZHEN}", "账户 [ID_NUMBER]", ("ID_NUMBER",)),
    # bank accounts
    (f"收款账号：{grouped(ACCOUNT_NO_CARD)}", "收款账号：[BANK_ACCOUNT]", ("BANK_ACCOUNT",)),
    (
        "account number: 0123 4567 8901 2345 67",
        "account number: [BANK_ACCOUNT]",
        ("BANK_ACCOUNT",),
    ),
    ("IBAN DE89 3704 0044 0532 0130 00", "IBAN [BANK_ACCOUNT]", ("BANK_ACCOUNT",)),
    ("pay to GB82WEST12345698765432 today", "pay to [BANK_ACCOUNT] today", ("BANK_ACCOUNT",)),
    # secrets in known formats
    ("key sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t", "key [SECRET]", ("SECRET",)),
    ("GITHUB_TOKEN=ghp_" + "a1B2c3D4e5" * 4, "GITHUB_TOKEN=[SECRET]", ("SECRET",)),
    ("AWS key AKIAIOSFODNN7EXAMPLE leaked", "AWS key [SECRET] leaked", ("SECRET",)),
    ("slack: xoxb-123456789012-abcdefghijkl", "slack: [SECRET]", ("SECRET",)),
    (f"Authorization: Bearer {JWT}", "Authorization: Bearer [SECRET]", ("SECRET",)),
    (f"私钥如下\n{PEM}\n别外传", "私钥如下\n[SECRET]\n别外传", ("SECRET",)),
    (
        "db at postgres://app:s3cr3t@db.internal/x",
        "db at postgres://app:[SECRET]@db.internal/x",
        ("SECRET",),
    ),
    # secrets after a keyword
    ("api_key=3f9a8b7c6d5e4f3a2b1c0d9e", "api_key=[SECRET]", ("SECRET",)),
    ("密钥是 9f86d081884c7d659a2feaa0c55ad015", "密钥是 [SECRET]", ("SECRET",)),
    ("访问令牌：Zm9vYmFyYmF6cXV4MTIz", "访问令牌：[SECRET]", ("SECRET",)),
    # passwords stated in text
    ("my password is hunter2.", "my password is [SECRET].", ("SECRET",)),
    ("My password is: Tr0ub4dor&3", "My password is: [SECRET]", ("SECRET",)),
    (
        "the wifi password for the office is sunshine99",
        "the wifi password for the office is [SECRET]",
        ("SECRET",),
    ),
    ("pwd: xxx", "pwd: [SECRET]", ("SECRET",)),
    (
        "I changed my password to hunter2 yesterday",
        "I changed my password to [SECRET] yesterday",
        ("SECRET",),
    ),
    ("密码是abc123，别告诉别人", "密码是[SECRET]，别告诉别人", ("SECRET",)),
    ("银行卡密码：P@ssw0rd!", "银行卡密码：[SECRET]", ("SECRET",)),
    ("家里wifi密码12345678", "家里wifi密码[SECRET]", ("SECRET",)),
    ("我把密码改成了 qwe!2345 了", "我把密码改成了 [SECRET] 了", ("SECRET",)),
    # several kinds at once, and overlaps
    (
        "张三，电话13812345678，邮箱zs@example.cn，密码：abc123",
        "张三，电话[PHONE]，邮箱[EMAIL]，密码：[SECRET]",
        ("PHONE", "EMAIL", "SECRET"),
    ),
    (
        "password for bob@example.com is hunter2",
        "password for [EMAIL] is [SECRET]",
        ("EMAIL", "SECRET"),
    ),
    ("my password is 13812345678", "my password is [SECRET]", ("SECRET",)),
    (
        f"证件 {ID_BEIJING} {VISA}",  # the card is blocking the ID until it is a tag
        "证件 [ID_NUMBER] [CARD]",
        ("ID_NUMBER", "CARD"),
    ),
]


@pytest.mark.parametrize(("text", "expected", "found"), MASKED)
def test_masks_personal_data_keeping_a_type_tag(
    text: str, expected: str, found: tuple[str, ...]
) -> None:
    result = default_filter().mask(text)
    assert result == MaskResult(expected, found)


@pytest.mark.parametrize(("text", "expected", "found"), MASKED)
def test_masking_is_idempotent(text: str, expected: str, found: tuple[str, ...]) -> None:
    once = default_filter().mask(text)
    assert default_filter().mask(once.text) == MaskResult(once.text, ())


# --- what is left alone ------------------------------------------------------------------

NEAR_MISSES: list[str] = [
    "订单号 20231105123456 已发货",
    f"订单号：{UNIONPAY}",  # passes Luhn, but it is introduced as an order number
    "Order #13812345678 has shipped",
    "会议定在2024-03-15 14:30:00，别迟到",
    "2024年3月15日下午3点见",
    "这台电脑¥1299.00，那台1,299元",
    "Salary is $15,000 a month, up 12.5%",
    "营收同比 +2023-2024 赛季持平",
    "升级到 Python 3.11.7 和 v2.13.5 之后好了",
    "这个号码12345678901不是手机号",
    "11111111111 is not a phone number",
    f"卡号不对：{grouped(broken_luhn(VISA))}",
    f"test number {broken_luhn(UNIONPAY)}",
    f"身份证号 {broken_id_check(ID_SHENZHEN)}",
    f"号码 {with_id_check('11010519490230002')}",  # 30 February
    f"号码 {with_id_check('11010520990101123')}",  # born in 2099
    "房间号1203，客服电话10086，报警110",
    "The password is too short, it must be longer",
    "My password was changed yesterday",
    "忘记密码了怎么办？密码错误三次会锁定",
    "密码长度至少8位",
    "I use a password manager for everything",
    "I gave the password to him and then reset it",
    "The secret to good tea is patience",
    "the token limit is 4096 per request",
    "Read https://example.com/docs?page=2&lang=zh for details",
    "see https://www.example.org:8080/path/to/page",
    "UUID 550e8400-e29b-41d4-a716-446655440000",
    "commit 3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a fixed it",
    "the ratio was 0.13812345678 overall",
    "timestamp 1699999999999 in ms",
    "ISBN 978-7-111-54742-6",
    "IBAN DE89 3704 0044 0532 0130 01 has a typo",
    "服务器 192.168.1.100 重启了",
    "@张三 明天下午见，地点待定",
    "我今天很开心，和朋友吃了火锅，聊了很多以前的事。",
    "We talked about her trip to Kyoto and the new job.",
]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_leaves_near_misses_alone(text: str) -> None:
    assert default_filter().mask(text) == MaskResult(text, ())


# --- API properties ------------------------------------------------------------------------


def test_found_lists_tags_never_raw_values() -> None:
    result = default_filter().mask(f"电话13812345678 卡 {VISA} 密码是abc123")
    assert result.found == ("PHONE", "CARD", "SECRET")
    for raw in ("13812345678", VISA, "abc123"):
        assert raw not in result.text
        assert all(raw not in tag for tag in result.found)


def test_mask_result_is_frozen() -> None:
    result = default_filter().mask("hi")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.text = "changed"  # type: ignore[misc]


def test_default_filter_is_built_once() -> None:
    assert default_filter() is default_filter()


def test_empty_text_is_returned_unchanged() -> None:
    assert default_filter().mask("") == MaskResult("", ())


def test_text_that_already_contains_tags_is_untouched() -> None:
    text = "password: [SECRET], phone [PHONE], card [CARD]"
    assert default_filter().mask(text) == MaskResult(text, ())


# --- tenant patterns ------------------------------------------------------------------------

TENANT_MASKED: list[tuple[list[tuple[str, str]], str, str, tuple[str, ...]]] = [
    (
        [("EMPLOYEE_ID", r"EMP-\d{6}")],
        "工号 EMP-204518 的同事",
        "工号 [EMPLOYEE_ID] 的同事",
        ("EMPLOYEE_ID",),
    ),
    (
        [("MEMBER_NO", r"会员号[:：]?\s*(?P<value>\d{8,12})")],
        "会员号：88812345，电话13812345678",
        "会员号：[MEMBER_NO]，电话[PHONE]",
        ("MEMBER_NO", "PHONE"),
    ),
    (
        [("PROJECT", r"(?i)project\s+(?:falcon|osprey)")],
        "The Project Falcon launch is secret",
        "The [PROJECT] launch is secret",
        ("PROJECT",),
    ),
    (
        [("PLATE", r"[京沪粤][A-Z]·?[A-Z0-9]{5}")],
        "车牌京A·12345停在楼下",
        "车牌[PLATE]停在楼下",
        ("PLATE",),
    ),
]


@pytest.mark.parametrize(("patterns", "text", "expected", "found"), TENANT_MASKED)
def test_tenant_patterns_mask_with_their_own_tag(
    patterns: list[tuple[str, str]], text: str, expected: str, found: tuple[str, ...]
) -> None:
    privacy = PrivacyFilter(patterns)
    assert privacy.mask(text) == MaskResult(expected, found)
    assert privacy.mask(expected) == MaskResult(expected, ())


@pytest.mark.parametrize(
    ("tag", "pattern", "reason", "message"),
    [
        ("EMP", r"EMP-(\d{6}", "invalid_syntax", r"not a valid pattern: missing \)"),
        ("EMP", "a" * 501, "too_long", "longer than 500"),
        ("EMP", r"x*", "matches_empty", "matches the empty string"),
        ("EMP", r"EMP-(?=\d{6})", "lookaround", "lookahead or lookbehind"),
        ("EMP", r"(?<!\d)\d{6}", "lookaround", "lookahead or lookbehind"),
        ("EMP", r"(\d)\1", "backreference", "backreferences"),
        ("EMP", r"(?P<d>\d)(?P=d)", "backreference", "backreferences"),
        ("EMP", r"(?>\d+)x", "atomic_group", "atomic groups"),
        ("EMP", r"\d++x", "atomic_group", "possessive"),
        ("EMP", r"EMP\Z", "invalid_syntax", r"write \\z"),
        ("EMP", r"(?:(?:x{100}){100}){100}", "invalid_syntax", "at most 1000"),
        ("employee", r"EMP-\d{6}", "invalid_tag", "UPPER_SNAKE_CASE"),
        ("", r"EMP-\d{6}", "invalid_tag", "UPPER_SNAKE_CASE"),
    ],
)
def test_tenant_patterns_re2_cannot_run_are_refused_with_a_reason(
    tag: str, pattern: str, reason: str, message: str
) -> None:
    with pytest.raises(PatternRefused, match=message) as refused:
        PrivacyFilter([(tag, pattern)])
    assert refused.value.reason == reason


def test_a_pattern_that_compiles_too_large_is_refused() -> None:
    with pytest.raises(PatternRefused) as refused:
        PrivacyFilter([("BIG", r"[\p{L}\p{N}]{1,60}@[\p{L}\p{N}]{1,60}\.[\p{L}]{2,60}")])
    assert refused.value.reason == "too_complex"


@pytest.mark.parametrize(
    "pattern",
    [
        r"(?:-\d{4}){2}",
        r"(?:[ -]?\d{4}){3}",
        r"\d+-\d+",
        r"[(+*)]{2,}x",
        r"\(a+\)+",
        r"(ab)?c",
        # Nested and overlapping quantifiers backtrack in Python's re; RE2 never does.
        r"(a+)+b",
        r"^(\w+\s?)+$",
        r"x(?:a|aa)+y",
        r"\p{Han}{2,4}先生",
    ],
)
def test_safe_tenant_patterns_are_accepted(pattern: str) -> None:
    PrivacyFilter([("CUSTOM", pattern)])


def test_too_many_tenant_patterns_are_rejected() -> None:
    patterns = [("CUSTOM", f"code{i}") for i in range(MAX_EXTRA_PATTERNS + 1)]
    with pytest.raises(ValueError, match="at most"):
        PrivacyFilter(patterns)
