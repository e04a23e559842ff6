"""English rules, read against the clause after its subject and time words, with
contractions expanded (I'm → I am, don't → do not)."""

from __future__ import annotations

import re

from tether.memories.enums import MemoryType as T
from tether.memories.extraction.rules import (
    ANY,
    DATED_PAST,
    FUTURE_ONLY,
    NOT_FUTURE,
    STATED,
    Rule,
)
from tether.memories.extraction.rules import rule as _rule

ADV = (
    r"(?:(?:really|absolutely|totally|just|also|still|truly|genuinely|honestly|actually|seriously"
    r"|kind of|kinda|so|very|pretty much|definitely|do|does|even|now|finally|recently|officially"
    r"|already)\s+)*"
)
INT = r"(?P<int>(?:really|absolutely|totally|truly|so|very|super)\s+)?"
BE = r"(?:am|is|are|was|were)"
OCCUPATION = (
    r"(?:teacher|nurse|doctor|engineer|developer|programmer|designer|student|lawyer|accountant|chef"
    r"|cook|writer|artist|photographer|manager|consultant|researcher|scientist|driver|pilot"
    r"|musician"
    r"|farmer|dentist|pharmacist|architect|analyst|professor|journalist|editor|translator|barista"
    r"|waiter|waitress|cashier|marketer|freelancer|mechanic|electrician|firefighter|officer|soldier"
    r"|vet|veterinarian|therapist|psychologist|librarian|intern|paramedic|plumber|carpenter|banker"
    r"|entrepreneur|founder|tutor|coach|trainer|recruiter|secretary|assistant|clerk|surgeon"
    r"|physician|postdoc|phd student|grad student|software engineer|data scientist|product manager"
    r"|owner|business owner|ceo|cto|stay-at-home mom|stay-at-home dad|homemaker|retiree)s?"
)
HAS_NOUN = (
    r"(?:dogs?|cats?|pupp(?:y|ies)|kittens?|corgis?|labradors?|labs?|poodles?|beagles?|huskies"
    r"|husky"
    r"|retrievers?|shibas?|pugs?|terriers?|dachshunds?|chihuahuas?|tabby|siamese|ragdolls?"
    r"|persians?|pets?|kids?|children|child|sons?|daughters?|brothers?"
    r"|sisters?|twins|bab(?:y|ies)|cars?|house|apartment|bikes?|rabbits?|hamsters?|birds?|parrots?"
    r"|fish|turtles?|horses?|boyfriend|girlfriend|husband|wife|partner|grandkids|grandchildren"
    r"|siblings?)"
)
EMOTION = (
    r"(?P<obj>happy|sad|down|depressed|anxious|nervous|stressed(?: out)?|worried|scared|lonely"
    r"|angry"
    r"|mad|upset|frustrated|excited|thrilled|overwhelmed|heartbroken|miserable|proud|grateful"
    r"|relieved|hopeless|burn(?:ed|t) out|homesick|jealous|devastated|ecstatic|terrified|furious"
    r"|annoyed|disappointed|hurt|numb|empty|low|blue|great|awful|terrible|hopeful|calm|content)"
)
DEGREE = (
    r"(?:(?:so|really|very|a little|a bit|a little bit|kind of|kinda|pretty|super|extremely|quite"
    r"|incredibly|totally|truly|just|too|completely|rather|somewhat|sooo+|soo)\s+)*"
)
LIKE = (
    r"(?:(?:have|has)\s+(?:gotten|got|been)\s+(?:really\s+|so\s+)?(?:into|obsessed with|loving"
    r"|enjoying)"
    rf"|{BE}\s+(?:(?:really|so|very|totally|super)\s+)?(?:into|obsessed with|crazy about"
    rf"|addicted to|passionate about|hooked on|loving"
    r"|enjoying|(?:a\s+)?(?:big\s+|huge\s+)?fan of)"
    r"|love|loves|adore|adores|like|likes|enjoy|enjoys|dig|digs|fell in love with|loving|enjoying"
    r"|digging)"
)
STYLE = (
    r"(?:short|shorter|brief|briefly|concise|long|longer|detailed|formal|formally|casual|casually"
    r"|friend|friendly|simple|simpler|english|chinese|spanish|gentle|gently|direct|honest|funny"
    r"|emojis?|bullet|plain|polite|serious|warm|slow|slowly)"
)
SIGNIFICANT = (
    r"(?:passed|failed|graduated|got (?:married|engaged|divorced|promoted|fired|laid off|hired"
    r"|accepted|the job|a job|a new job|into)|broke up|finished|completed|won|lost|tore|broke"
    r"|sprained|injured|retired|ran|had (?:a baby|surgery)|gave birth|proposed|started|quit|opened"
    r"|launched|founded)"
)


def rule(
    pattern: str,
    memory_type: T,
    predicate: str,
    *,
    negated: bool = False,
    when: str = ANY,
    extra: tuple[tuple[str, str], ...] = (),
    persona_ok: bool = False,
) -> Rule:
    """English rules ignore case; the object keeps the case it was written in."""
    return _rule(
        pattern,
        memory_type,
        predicate,
        negated=negated,
        when=when,
        extra=extra,
        persona_ok=persona_ok,
        flags=re.IGNORECASE,
    )


# "Hi, I'm Daniel": only after a greeting, and only a capitalised name (not "I'm Tired").
GREETING_NAME = _rule(r"^(?i:am)\s+(?P<obj>[A-Z][a-z'-]+(?:\s+[A-Z][a-z'-]+)?)$", T.PROFILE, "name")


INSTRUCTIONS: list[Rule] = [
    rule(
        r"^(?:please\s+|you\s+can\s+|just\s+|feel free to\s+)*call\s+me\s+"
        r"(?P<obj>[a-z][\w'-]*(?:\s+[A-Z][\w'-]*)?)(?:\s*,.*|\s+instead.*|\s+please)?$",
        T.INSTRUCTION,
        "call_me",
    ),
    rule(
        r"^(?:please\s+)?(?:do not|never|stop)\s+(?:ever\s+)?(?:mention|mentioning|bring up"
        r"|bringing up"
        r"|talk about|talking about|ask me about|asking me about|remind me of|remind me about"
        r"|joke about"
        r"|suggest|suggesting|recommend|recommending|send me)"
        r"\s+(?P<obj>.+)$",
        T.INSTRUCTION,
        "avoid_topic",
    ),
    rule(
        rf"^(?:please\s+)?(?P<obj>(?:keep|make)\s+(?:your\s+|the\s+)?(?:answers|replies|responses"
        rf"|messages|it"
        rf"|them|things)\s+.*\b{STYLE}\b.*)$",
        T.INSTRUCTION,
        "reply_style",
        persona_ok=True,
    ),
    rule(
        rf"^(?:please\s+)?(?P<obj>(?:talk|speak|write|reply|answer|respond"
        rf"|text)\s+.*\b{STYLE}\b.*)$",
        T.INSTRUCTION,
        "reply_style",
        persona_ok=True,
    ),
    rule(
        rf"^(?:please\s+)?(?P<obj>(?:be\s+(?:more|less)|use\s+(?:more|less|fewer"
        rf"|no))\s+.*\b{STYLE}\b.*)$",
        T.INSTRUCTION,
        "reply_style",
        persona_ok=True,
    ),
    rule(r"^let\s+us\s+(?P<obj>.+)$", T.COMMITMENT, "promise", when=FUTURE_ONLY, persona_ok=True),
]

OBJECT_FIRST: list[Rule] = [
    rule(
        r"^(?P<obj>[^,]+?)\s+(?:is|are)\s+(?:definitely\s+|probably\s+)?my\s+(?:absolute\s+"
        r"|all-time\s+)?"
        r"(?:favou?rite|jam|thing)\b",
        T.PREFERENCE,
        "likes",
    ),
]

RULES: list[Rule] = [
    rule(
        r"^(?:absolute\s+|all-time\s+)?favou?rite\s+(?:[\w-]+\s+){0,3}?(?:is|are)\s+(?P<obj>.+)$",
        T.PREFERENCE,
        "likes",
    ),
    rule(
        rf"^{ADV}{BE}\s+(?:very\s+|severely\s+|really\s+|deathly\s+"
        rf"|super\s+)?allergic\s+to\s+(?P<obj>.+)$",
        T.PROFILE,
        "allergic_to",
    ),
    rule(
        rf"^{ADV}(?:have|has)\s+an?\s+(?P<obj>[\w-]+(?:\s+[\w-]+)?)\s+allergy$",
        T.PROFILE,
        "allergic_to",
    ),
    rule(
        rf"^{ADV}{BE}\s+(?P<neg>not|no longer)\s+{ADV}(?:a\s+)?(?:big\s+|huge\s+)?(?:fan of|into"
        r"|keen on|crazy about|that into)\s+(?P<obj>.+)$",
        T.PREFERENCE,
        "likes",
    ),
    rule(
        rf"^{ADV}(?P<neg>do not|does not|did not|no longer|never|cannot|can not)\s+{ADV}"
        r"(?:like|likes|liked|love|enjoy|care for|eat|eats|drink|drinks|play|plays|watch|stand)\s+"
        r"(?P<obj>.+)$",
        T.PREFERENCE,
        "likes",
    ),
    rule(
        rf"^{ADV}(?:hate|hates|dislike|dislikes|detest|loathe|despise|{BE} not fond of|{BE} sick of"
        rf"|{BE} tired of)\s+(?P<obj>.+)$",
        T.PREFERENCE,
        "likes",
        negated=True,
    ),
    rule(
        rf"^{ADV}(?:have\s+|has\s+)?(?:stopped|quit|gave up|given up)\s+(?P<obj>\w+ing\b.*)$",
        T.PREFERENCE,
        "likes",
        negated=True,
    ),
    rule(
        rf"^{ADV}(?:prefer|prefers)\s+(?P<obj>.+?)(?:\s+(?:over|to|rather than|more than"
        rf"|instead of)\s+.+)?$",
        T.PREFERENCE,
        "likes",
    ),
    rule(rf"^{ADV}{INT}{LIKE}\s+(?P<obj>.+)$", T.PREFERENCE, "likes"),
    rule(r"^name\s+is\s+(?P<obj>[a-z][\w'-]*(?:\s+[A-Z][\w'-]*){0,2})$", T.PROFILE, "name"),
    # "my dog is called Mochi", "I am named after…" is not a name: one or two words, no "after".
    rule(
        r"^(?:is|am|was)\s+(?:called|named)\s+(?!after\b)(?P<obj>[a-z][\w'-]*(?:\s+[A-Z][\w'-]*)?)$",
        T.PROFILE,
        "name",
    ),
    rule(r"^birthday\s+is\s+(?:on\s+)?(?P<obj>.+)$", T.PROFILE, "birthday"),
    rule(
        rf"^{ADV}(?:{BE}|turned|am turning|will be)\s+(?P<obj>\d{{1,3}})(?:\s+(?:years?"
        rf"|yrs?)(?:\s+old)?)?$",
        T.PROFILE,
        "age",
    ),
    rule(rf"^{ADV}{BE}\s+(?:originally\s+)?from\s+(?P<obj>.+)$", T.PROFILE, "from"),
    rule(
        rf"^{ADV}(?:grew up|was born|was raised|was born and raised)\s+in\s+(?P<obj>.+)$",
        T.PROFILE,
        "from",
    ),
    rule(r"^hometown\s+is\s+(?P<obj>.+)$", T.PROFILE, "from"),
    rule(
        rf"^{ADV}(?:moved|came|went|have moved)\s+back\s+home\s+to\s+(?P<obj>.+)$",
        T.PROFILE,
        "lives_in",
        extra=(("obj", "from"),),
    ),
    rule(
        rf"^{ADV}(?:{BE}|went|became|turned|have been|have gone|have become)\s+(?:an?\s+|fully\s+)?"
        r"(?P<obj>vegetarian|vegan|pescatarian|plant-based|keto|gluten-free|lactose intolerant)$",
        T.PROFILE,
        "diet",
    ),
    rule(
        rf"^{ADV}(?:can|know how to)\s+(?P<obj>(?:play|speak|cook|swim|draw|paint|sing|dance|code"
        rf"|drive|knit"
        r"|bake|ski|surf|skate|sew)\b.*)$",
        T.FACT,
        "can",
    ),
    rule(
        rf"^{ADV}(?:live|lives|{BE} living|have been living|has been living|have lived|reside"
        rf"|resides"
        rf"|{BE} based|moved|have moved|has moved|relocated|moved back)\s+(?:in|to"
        rf"|back to)\s+(?P<obj>.+)$",
        T.PROFILE,
        "lives_in",
    ),
    rule(
        rf"^{ADV}(?:work|works|{BE} working|have been working|has been working|intern|interns"
        rf"|{BE} interning)\s+(?:at|for)\s+(?P<obj>.+?)(?:\s+as\s+(?:an?\s+)?(?P<role>.+))?$",
        T.PROFILE,
        "works_at",
        extra=(("role", "occupation"),),
    ),
    rule(
        rf"^{ADV}(?:work|works|{BE} working)\s+as\s+(?:an?\s+)?(?P<obj>.+?)(?:\s+(?:at"
        rf"|for)\s+(?P<org>.+?))?"
        r"(?:\s+in\s+.+)?$",
        T.PROFILE,
        "occupation",
        extra=(("org", "works_at"),),
    ),
    rule(
        rf"^{ADV}(?:{BE}\s+)?(?:starting|doing|pursuing|studying for|finishing|in)\s+(?:a\s+"
        rf"|my\s+)?"
        r"(?P<role>master's|masters|master|phd|ph\.d\.|doctorate|bachelor's|degree|mba|undergrad)"
        r"(?:\s+(?:degree|program))?\s+(?:at|in)\s+(?P<obj>.+)$",
        T.PROFILE,
        "studies_at",
    ),
    rule(
        rf"^{ADV}(?:go to|goes to|study at|studies at|{BE} studying at|attend"
        rf"|attends)\s+(?P<obj>.+?"
        r"(?:university|college|school|academy|institute))$",
        T.PROFILE,
        "studies_at",
    ),
    rule(
        rf"^{ADV}(?:got a job|got hired|started a new job|started working|joined|landed a job)"
        r"\s+(?:at|with)?\s*(?P<obj>.+)$",
        T.PROFILE,
        "works_at",
    ),
    rule(
        rf"^{ADV}{BE}\s+(?:an?\s+)(?P<obj>(?:[\w-]+\s+){{0,2}}{OCCUPATION})$",
        T.PROFILE,
        "occupation",
    ),
    rule(
        rf"^{ADV}(?:have|has|have got|own|owns|adopted|got)\s+(?:an?|one|two|three|four|five"
        rf"|\d+)\s+"
        rf"(?P<obj>(?:[\w-]+\s+){{0,2}}{HAS_NOUN})\b",
        T.FACT,
        "has",
    ),
    rule(
        rf"^{ADV}(?:{BE}|have been|has been)\s+(?:currently\s+)?(?:learning|studying for|studying"
        r"|preparing for|training for|practicing|taking classes in"
        r"|taking lessons in)\s+(?P<obj>.+)$",
        T.FACT,
        "learning",
    ),
    rule(
        rf"^{ADV}(?:started|began|{BE} starting)\s+(?:learning|studying|to learn)\s+(?P<obj>.+)$",
        T.FACT,
        "learning",
    ),
    rule(r"^(?:learning|studying for|studying)\s+(?P<obj>.+)$", T.FACT, "learning"),
    rule(
        rf"^{ADV}(?:promise|swear)\s+(?:that\s+)?(?:i\s+will\s+|to\s+|i\s+)?(?P<obj>.+)$",
        T.COMMITMENT,
        "promise",
        persona_ok=True,
    ),
    rule(
        rf"^{ADV}(?:will|{BE} going to|{BE} gonna|shall)\s+(?P<obj>.*\b(?:you|your)\b.*)$",
        T.COMMITMENT,
        "promise",
        when=FUTURE_ONLY,
        persona_ok=True,
    ),
    rule(
        rf"^{ADV}(?:{BE}\s+)?(?:going to\s+|gonna\s+)?(?:going|flying|heading|driving|traveling"
        rf"|travelling)"
        r"\s+(?:to\s+|back to\s+|out to\s+)?(?P<obj>.+)$",
        T.COMMITMENT,
        "plans",
        when=FUTURE_ONLY,
    ),
    rule(
        rf"^{ADV}(?:{BE}\s+)?(?P<obj>(?:visiting|moving|starting|meeting|seeing|taking|attending"
        rf"|having"
        r"|running|getting)\s+.+)$",
        T.COMMITMENT,
        "plans",
        when=FUTURE_ONLY,
    ),
    rule(
        rf"^{ADV}(?:will be|{BE})\s+(?:in|at)\s+(?P<obj>.+)$",
        T.COMMITMENT,
        "plans",
        when=FUTURE_ONLY,
    ),
    rule(
        rf"^{ADV}(?:have|has|have got)\s+(?:an?\s+|my\s+)(?P<obj>.+)$",
        T.COMMITMENT,
        "plans",
        when=FUTURE_ONLY,
    ),
    rule(
        rf"^{ADV}(?:will|{BE} going to|{BE} gonna)\s+(?P<obj>.+)$",
        T.COMMITMENT,
        "plans",
        when=FUTURE_ONLY,
    ),
    rule(
        rf"^{ADV}(?:plan to|plans to|{BE} planning to|{BE} planning on|intend to)\s+(?P<obj>.+)$",
        T.COMMITMENT,
        "plans",
    ),
    rule(
        rf"^{ADV}(?:went|traveled|travelled|flew|drove|took a trip|headed)\s+(?:out\s+)?(?:to|for"
        rf"|back to)"
        r"\s+(?P<obj>.+)$",
        T.EVENT,
        "went",
        when=NOT_FUTURE,
    ),
    rule(
        rf"^{ADV}(?:visited|got back from|came back from)\s+(?P<obj>.+)$",
        T.EVENT,
        "went",
        when=NOT_FUTURE,
    ),
    rule(rf"^{ADV}went\s+(?P<obj>\w+ing\b.*)$", T.EVENT, "went", when=NOT_FUTURE),
    rule(rf"^{ADV}(?P<obj>{SIGNIFICANT}\b.*)$", T.EVENT, "did", when=NOT_FUTURE),
    rule(
        rf"^{ADV}(?P<obj>(?:\w+ed|saw|ate|met|bought|made|took|ran|read|wrote|won|did"
        rf"|watched)\s+.+)$",
        T.EVENT,
        "did",
        when=DATED_PAST,
    ),
    rule(
        rf"^{ADV}(?:{BE}|feel|feels|{BE} feeling|have been feeling|have been|has been"
        rf"|felt)\s+(?P<neg>not\s+)?"
        rf"{DEGREE}{EMOTION}(?:\s+(?:about|because|since|after|with|that|and|but|for|right now"
        rf"|today)\b.*)?$",
        T.EMOTION,
        "feels",
        when=STATED,
    ),
]
