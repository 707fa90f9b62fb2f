"""TypeSafe's documented failure modes, as lints, in pure Python.

This module owns the semantic lints: the ways a well-formed question still gets a meaningless
answer, as TypeSafe documents them for Jev and as jevkit-lint and question-kit check them —
counting or arithmetic, comparing dates or numbers inside the state, numbers in a form the state
may not share (shorthand, percentages, machine encodings), lookups chained across the state
(multi-hop indirection), asking for generated text, double negation, vague evaluative words with
no criteria, inverted noul polarity, bare score levels, missing or one-word instructions,
instructions naming another question's id, a backticked state path no sample state has,
identical questions. The structural lints (an
undescribed option, no escape option, two equal descriptions, a compound noul, the token budget)
stay in `spec`, beside the shapes they read.

Every lint is a warning that never repairs: `check()` returns `spec.Issue`s (path, code, a
message quoting the words that fired and saying what to do, question, loc) and changes nothing.
`core.check.validate()` calls `check()` once, on the questions that parsed (`spec` knows none).

What the rules read: the instructions and the descriptions of options, levels and cases (through
`spec.entry_text`), never an entry's `examples` (they are the user's data, quoted), nor text in
quotation marks or backticks inside a sentence (quoted data, commands, state paths). Rules match
whole words, case-folded. They are tuned against false positives: a rule fires on a shape that is
a mistake nearly every time it appears (an imperative "Summarise …", not "does the user ask to
summarise …"; "more than 30 days", not "more than one topic").
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from questions.core import spec
from questions.core.numbers import whole_number

CODES: Final = (
    "counting",
    "state_comparison",
    "numeric_representation",
    "multi_hop",
    "generation",
    "double_negation",
    "vague_criterion",
    "inverted_polarity",
    "bare_levels",
    "missing_instructions",
    "one_word_instructions",
    "names_other_question",
    "unknown_state_path",
    "identical_questions",
)

Loc = tuple[str | int, ...]

# --- reading the text ---------------------------------------------------------------------------

#: text in quotation marks or backticks: the user's data, a command, a state path
_QUOTED = re.compile(r"“[^”]*”|\"[^\"]*\"|‘[^’]*’|(?<!\w)'[^'\n]*'(?!\w)|«[^»]*»|`[^`]*`")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


#: texts up to this long are remembered between checks (the editor checks the same words on
#: every keystroke); a longer one is read afresh each time, so the memory held stays small
_REMEMBERED_CHARS: Final = 2000


def _per_text(fn: Callable[[str], Any]) -> Callable[[str], Any]:
    """`fn`, remembering its result for the last texts of up to `_REMEMBERED_CHARS`."""
    cached = functools.lru_cache(maxsize=8192)(fn)

    @functools.wraps(fn)
    def read(text: str) -> Any:
        return cached(text) if len(text) <= _REMEMBERED_CHARS else fn(text)

    return read


_QUOTE_MARKS = frozenset("\"“‘'`«")


@_per_text
def _plain(text: str) -> str:
    """The words of `text` outside quotation marks and backticks, each quoted run replaced by a
    placeholder word so that the words around it do not join."""
    if not text or _QUOTE_MARKS.isdisjoint(text):
        return text
    return _QUOTED.sub(" QUOTED ", text)


_SPACES = str.maketrans({c: " " for c in '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~“”‘«»—–…\n\t'})


@_per_text
def _words(text: str) -> frozenset[str]:
    """The case-folded words of `text`: what decides, cheaply, whether a rule can fire at all."""
    return frozenset(text.casefold().translate(_SPACES).split())


_DESCRIBING_KEYS = ("what", "not_for")
_ENTRY_KEYS = frozenset(spec.ENTRY_KEYS)


def _entry_words(entry: Any) -> str:
    """What an entry describes, without its examples: `spec.entry_text` of the entry less its
    `examples` — for a string and the documented object read here directly, the editor reads
    255 of them on a keystroke."""
    if isinstance(entry, str):
        return entry.strip()
    if isinstance(entry, dict):
        if entry.keys() <= _ENTRY_KEYS:
            parts = (entry.get(key) for key in _DESCRIBING_KEYS)
            return " ".join(p.strip() for p in parts if isinstance(p, str) and p.strip())
        if "examples" in entry:
            entry = {k: v for k, v in entry.items() if k != "examples"}
    return spec.entry_text(entry)


def _texts(question: spec.Question) -> list[tuple[Loc, str]]:
    """(place, words) of a question: its instructions, then each described entry."""
    base: Loc = ("questions", question.id)
    out: list[tuple[Loc, str]] = []
    instructions = spec.entry_text(question.instructions)
    if instructions:
        out.append(((*base, "instructions"), instructions))
    criteria = question.criteria
    if isinstance(criteria, dict):
        items: Iterable[tuple[str | int, Any]] = criteria.items()
    elif isinstance(criteria, list):
        items = enumerate(criteria)
    else:
        items = ()
    for key, entry in items:
        words = _entry_words(entry)
        if words:
            out.append(((*base, "criteria", key), words))
    return out


def _quote(words: str) -> str:
    return f"“{' '.join(words.split())}”"


# --- the word rules -----------------------------------------------------------------------------

_I = re.IGNORECASE

#: counting or arithmetic asked of the model
#: counting or arithmetic asked of the model: (the words one of which it needs, its pattern) —
#: a text runs only the patterns whose words it has
_COUNTING: Final = tuple(
    (frozenset(words.split()), re.compile(pattern, re.IGNORECASE))
    for words, pattern in (
        ("how", r"\bhow many\b"),
        ("number", r"\bnumber of\b"),
        ("count counting", r"\bcount(?:ing)? (?:the|of|how|up|all|every|each)\b"),
        ("tally", r"\btally\b"),
        ("sum", r"\b(?:the )?sum of\b|\bsum (?:up|the)\b"),
        ("add", r"\badd (?:up|together)\b"),
        ("total totals", r"\bin total\b|\btotals? (?:of|up)\b"),
        (
            "average mean median",
            r"\b(?:the )?(?:average|mean|median) (?:of|number|value|amount|price|score|rating)\b"
            r"|\bon average\b",
        ),
        (
            "calculate calculates calculating compute computes computing",
            r"\b(?:calculate|calculates|calculating|compute|computes|computing)\b",
        ),
        (
            "percentage percent fraction proportion share",
            r"\b(?:what|which) (?:percentage|percent|fraction|proportion|share)\b"
            r"|\bpercentage of\b",
        ),
        ("divided multiplied", r"\b(?:divided|multiplied) by\b"),
        ("subtract subtracted", r"\bsubtract(?:ed)?\b"),
        ("plus minus times + × * ÷", r"\d+\s*(?:[+×*÷]|plus|minus|times)\s*\d+"),
    )
)
_COMPARISON_WORDS = frozenset(
    """than least most exceed exceeds exceeding exceeded above below under over beyond past
    before after prior until since within between apart ago how recent earliest latest oldest
    newest compare compares comparing""".split()  # noqa: SIM905
)
_COUNTING_WORDS = frozenset().union(*(needs for needs, _ in _COUNTING))
_OPERATORS = frozenset("+×*÷<>≤≥=")
_ARITHMETIC_MARKS = frozenset("+×*÷")
_NEGATION_WORDS = frozenset(
    """not never no none nobody nothing neither nor without cannot can't cant won't""".split()  # noqa: SIM905
)


#: a comparison word, and what makes it a comparison of numbers or dates
_COMPARATOR = (
    r"(?:greater|more|less|fewer|higher|lower|larger|smaller|bigger|longer|shorter|older|"
    r"younger|earlier|later|sooner|cheaper|dearer)\s+than"
    r"|at (?:least|most)|no (?:more|less|later|earlier) than|(?:exceeds?|exceeding|exceeded)"
    r"|(?:above|below|under|over|beyond|past|before|after|prior to|until|since|within)"
    r"|[<>≤≥]=?|={2}"
)
#: what is compared: a number, an amount, or a date
_QUANTITY = (
    r"(?:[$£€¥]\s?\d[\d,.]*|\d[\d,.]*(?:\s?%|\s(?:days?|weeks?|months?|years?|hours?|"
    r"minutes?|[a-z]{1,3}\b))?)"
    r"|\b(?:amount|total|price|cost|balance|sum|value|age|limit|threshold|quota|budget|"
    r"salary|income|score|count|quantity|percentage|percent|rate|date|dates|deadline|"
    r"timestamp|time ?stamp|due date|expiry|expiration|birthday|today|yesterday|tomorrow|"
    r"now|days?|weeks?|months?|years?|hours?|minutes?|seconds?)\b"
)
_STATE_COMPARISON = re.compile(
    rf"\b(?:{_COMPARATOR})\s+(?:the\s+|a\s+|an\s+|its\s+|their\s+|his\s+|her\s+)?"
    rf"(?:[\w-]+\s+){{0,2}}?(?:{_QUANTITY})"
    rf"|\b(?:days|weeks|months|years|hours)\s+(?:between|apart|since|until|ago|before|after)\b"
    r"|\bhow (?:long ago|old|recent|recently|long since)\b"
    r"|\b(?:most recent|earliest|latest|oldest|newest)\s+(?:[\w-]+\s+){0,2}?"
    r"(?:date|day|month|year|deadline|timestamp|order|entry|event|payment|invoice)\b"
    r"|\b(?:compare|compares|comparing)\b[^.;?!]{0,40}\b(?:amounts?|totals?|prices?|dates?|"
    r"numbers?|values?|balances?|timestamps?|deadlines?)\b",
    _I,
)
_COMPARED_SIDE = re.compile(
    r"\b(?:amount|total|price|cost|balance|value|age|date|deadline|timestamp|count|quantity|"
    r"score|number)\b[^.;?!]{0,30}\b(?:is|are|was|were)?\s*(?:greater|more|less|fewer|higher|"
    r"lower|larger|smaller|older|younger|earlier|later)\s+than\b",
    _I,
)

#: an imperative to write text: at the start of a sentence or clause, or after "please"
_GEN_VERB = (
    r"(?:write|draft|compose|summari[sz]e|paraphrase|rephrase|rewrite|translate|explain|"
    r"describe|list|extract|generate|produce|suggest|propose|outline|reply|respond|name|"
    r"give|provide|quote|spell out)"
)
_GENERATION = re.compile(
    rf"(?:^|[.!?;:\n]\s*|\b(?:please|then|also|and)\s+|\b(?:you (?:must|should|will|need to)|"
    rf"your (?:task|job) is to)\s+)"
    rf"(?P<verb>{_GEN_VERB})\b(?P<rest>[^.!?;\n]{{0,40}})"
    r"|\bin your own words\b|\bexplain your (?:reasoning|answer|choice)\b"
    r"|\bin (?:one|a|two|three|a few|\d+) (?:sentences?|words|paragraphs?|lines?)\b"
    r"|\b(?:give|provide|produce|generate|create|suggest|propose)\s+(?:me\s+)?(?:a|an|the|some)\s+"
    r"(?:[\w-]+\s+){0,2}?(?:summary|explanation|reason|rationale|justification|reply|response|"
    r"description|paragraph|sentence|email|letter|title|headline|translation|rewrite|message)\b",
    _I | re.MULTILINE,
)
#: "give" / "provide" / "name" / "list" are imperatives to write only with something to write
_GEN_WEAK = frozenset({"give", "provide", "name", "list", "quote", "reply", "respond"})
#: verbs that are imperatives to write only with an object after them ("Write a reply", not
#: "Write access to production: …")
_GEN_DETERMINED = frozenset({"write", "draft", "compose", "generate", "produce", "suggest"})
_GEN_DETERMINER = re.compile(
    r"\s+(?:a|an|the|some|me|us|them|it|this|that|these|those|one|two|three|\d+|your|down|"
    r"out|back|up)\b",
    _I,
)
_GEN_OBJECT = re.compile(
    r"\b(?:summary|explanation|reason|reasons|rationale|justification|reply|response|"
    r"description|paragraph|sentence|sentences|email|letter|title|headline|translation|"
    r"message|list|words|text|names?|examples?|steps|items|the customer|the user|to the)\b",
    _I,
)

#: one negation; two in one clause cancel (or tangle)
_NEGATOR = (
    r"not|never|no|none|nobody|nothing|neither|nor|without|cannot|can't|cant|won't|"
    r"isn't|aren't|wasn't|weren't|doesn't|don't|didn't|hasn't|haven't|hadn't|shouldn't|"
    r"wouldn't|couldn't|mustn't|isnt|doesnt|dont"
)
_NEGATED_WORD = (
    r"un(?!der|til|ion|it|ique|iver|ited|less|ix|cle|o\b|ified|iform)[a-z]{4,}"
    r"|(?:im|in|il|ir)(?:possible|probable|plausible|legal|legitimate|valid|correct|appropriate|"
    r"relevant|proper|significant|complete|accurate|consistent|active|frequent|secure|"
    r"sufficient|adequate|acceptable|reasonable|likely|capable|eligible|visible|responsible|"
    r"regular|rational|formal|direct|essential|polite|patient|practical|partial|moral|mature|"
    r"perfect|plausible|possible|probable)"
    r"|dis(?:agree|agrees|allowed|honest|approve|approves|like|likes|satisfied|trust|"
    r"qualified|abled|connected|continued|proven)"
    r"|non-?[a-z]{3,}|lacks?|lacking|missing|absent|fails? to|failed to|refuses? to|"
    r"denies|denied|free of|exclud(?:e|es|ed|ing)|avoid(?:s|ed)?|prevent(?:s|ed)?"
)
#: words and the marks that end a clause
_TOKEN = re.compile(r"[\w'’-]+|[,;:.?!()\n—–]")
_CLAUSE_WORDS = frozenset(("and", "or", "but", "because", "while", "whereas", "so"))
#: how many words may stand between two negations of one clause
_NEGATION_REACH = 7
_CLAUSE = re.compile(r"[,;:.?!()\n—–]|\b(?:and|or|but|because|while|whereas|so)\b", _I)

#: evaluative words the model has to guess the meaning of
_VAGUE = re.compile(
    r"\b(?:appropriate|inappropriate|relevant|irrelevant|good|bad|suitable|unsuitable|proper|"
    r"improper|reasonable|unreasonable|acceptable|unacceptable|adequate|inadequate|"
    r"sufficient|insufficient|significant|meaningful|important|problematic|concerning|"
    r"decent|nice|fine|okay|ok|normal|legitimate|quality)\b"
    r"(?! (?:morning|afternoon|evening|night|faith|news|day)\b)",
    _I,
)
_DEFINED = re.compile(
    r"\s*(?::|—|–| - |\(|,? (?:means|meaning|here means|is defined as|i\.e\.|that is|"
    r"as in|such as|for example|e\.g\.|defined as)\b)",
    _I,
)

#: a yes/no answer word standing alone at the start of a case
_READS_NO = re.compile(r"^\s*(?:no|nope|false|negative|incorrect|wrong|n)\b\s*(?:$|[,.;:!—–-])", _I)
_READS_YES = re.compile(
    r"^\s*(?:yes|yep|yeah|true|correct|affirmative|positive|indeed|y)\b\s*(?:$|[,.;:!—–-])", _I
)
#: a case that opens by denying something: "No urgency expressed", "Not spam"
_STARTS_NEGATED = re.compile(
    r"^\s*(?:no|not|never|without|isn't|is not|doesn't|does not|didn't|did not|hasn't|"
    r"has not)\s+(?:a\s+|an\s+|the\s+|any\s+)?(?P<words>(?:[\w'’-]+\s*){1,5})",
    _I,
)
_ANY_NEGATION = re.compile(rf"\b(?:{_NEGATOR})\b|\b(?:{_NEGATED_WORD})\b|n['’]t\b", _I)


def _stem(word: str) -> str:
    return word.casefold()[:5]


def _denies_the_question(case: str, instructions: str) -> bool:
    """Whether a case opens by denying what the instructions ask about: "No urgency expressed"
    for "Does this convey urgency?" (its own subject, negated). "No violence, no swearing" for
    "Is the story fit for children?" denies something else, and is a fine `true` case."""
    m = _STARTS_NEGATED.match(case)
    if not m:
        return False
    asked = {_stem(w) for w in _WORD.findall(instructions) if len(w) >= 4}
    return any(_stem(w) in asked for w in _WORD.findall(m.group("words")) if len(w) >= 4)


_WORDS_PER_BARE_LEVEL = 2
_BACKTICKED = re.compile(r"`([^`\n]{1,200})`")
_PATH = re.compile(r"[A-Za-z_$][\w$-]*(?:\.[\w$-]+|\[\d*\])*")
_PATH_PART = re.compile(r"\[(\d*)\]|\.?([^.\[\]]+)")
_DISTINCTIVE_ID = re.compile(r"[_\-\d.]|[a-z][A-Z]")


#: words that make what follows reported speech: the user's question, not the model's task
_REPORTING = frozenset(
    (
        *("ask", "asks", "asked", "asking", "wonder", "wonders", "wondering", "know", "knows"),
        *("say", "says", "said", "mention", "mentions", "mentioned", "whether", "want", "wants"),
    )
)
_SENTENCE_START = re.compile(r".*[.?!;\n]", re.DOTALL)


def _reported(text: str, start: int) -> bool:
    """Whether the sentence before `start` reports what someone else says or asks ("does the
    customer ask how many days delivery takes", "does the user ask whether the total is over
    $100"): the user's question, which the model can recognise, not a sum it must do."""
    head = text[:start]
    if m := _SENTENCE_START.match(head):
        head = head[m.end() :]
    return any(w.casefold() in _REPORTING for w in _WORD.findall(head))


#: "a number of" is "several", a "phone number of" a label: neither asks for a count
_NOT_A_COUNT = frozenset(
    """a any phone account order version serial reference tracking case ticket invoice policy
    registration id card house street flight room seat""".split()  # noqa: SIM905
)


def _a_label_number(text: str, m: re.Match) -> bool:
    if not m.group(0).casefold().startswith("number"):
        return False
    before = _WORD.findall(text[max(0, m.start() - 30) : m.start()])
    return bool(before) and before[-1].casefold() in _NOT_A_COUNT


def _search(
    pattern: re.Pattern,
    text: str,
    *,
    clauses: bool = False,
    skip: Callable[[str, re.Match], bool] | None = None,
) -> re.Match | None:
    """The first match of `pattern` in `text` (inside one clause when `clauses`) that is not
    reported speech (nor one `skip` says is no hit)."""
    for clause in _CLAUSE.split(text) if clauses else (text,):
        for m in pattern.finditer(clause or ""):
            if not _reported(clause, m.start()) and not (skip and skip(clause, m)):
                return m
    return None


@_per_text
def _counting_hit(text: str) -> str | None:
    """The words of `text` that ask for a count or a sum, or None."""
    words = _words(text)
    arithmetic = not _ARITHMETIC_MARKS.isdisjoint(text)
    if words.isdisjoint(_COUNTING_WORDS) and not arithmetic:
        return None
    found: list[re.Match] = []
    for needs, pattern in _COUNTING:
        if needs.isdisjoint(words) and not (arithmetic and "+" in needs):
            continue
        plain = _plain(text)
        if m := _search(pattern, plain, skip=_a_label_number):
            found.append(m)
    return min(found, key=lambda m: m.start()).group(0) if found else None


@_per_text
def _comparison_hit(text: str) -> str | None:
    """The words of `text` that compare numbers or dates, or None."""
    if _words(text).isdisjoint(_COMPARISON_WORDS) and _OPERATORS.isdisjoint(text):
        return None
    plain = _plain(text)
    m = _search(_STATE_COMPARISON, plain, clauses=True) or _search(_COMPARED_SIDE, plain)
    return m.group(0) if m else None


_NEGATED_WORDS = frozenset(
    (
        *("lack", "lacks", "lacking", "missing", "absent", "fail", "fails", "failed", "free"),
        *("refuse", "refuses", "denies", "denied", "exclude", "excludes", "excluded"),
        *("excluding", "avoid", "avoids", "avoided", "prevent", "prevents", "prevented"),
    )
)
_NEGATED_PREFIXES = ("un", "in", "im", "il", "ir", "dis", "non")


_NEGATOR_WORD, _NEGATED, _NEGATED_TWO_WORDS = 2, 1, 3
_NEGATOR_RE = re.compile(rf"(?:{_NEGATOR})", _I)
_NEGATED_RE = re.compile(rf"(?:{_NEGATED_WORD})", _I)


@functools.lru_cache(maxsize=8192)
def _negates(token: str) -> int:
    """What a case-folded token is to a clause: -1 its end, 2 a negator ("not", "isn't"), 1 a
    word that means "not …" ("unhappy", "missing"), 3 one that does with the next word ("fails
    to", "free of"), 0 anything else."""
    if (not token[0].isalnum() and token[0] not in "'’") or token in _CLAUSE_WORDS:
        return -1
    if _NEGATOR_RE.fullmatch(token) or token.endswith(("n't", "n’t")):
        return _NEGATOR_WORD
    if token in ("fail", "fails", "failed", "refuse", "refuses", "free"):
        return _NEGATED_TWO_WORDS
    return _NEGATED if _NEGATED_RE.fullmatch(token) else 0


@_per_text
def _double_negation_hit(text: str) -> str | None:
    """The words of `text` that negate twice in one clause ("not unlikely", "isn't … never"),
    or None. Read token by token: a clause ends at a mark or at and / or / but."""
    words = _words(text)
    if words.isdisjoint(_NEGATION_WORDS) and "n't" not in text and "n’t" not in text:
        return None
    tokens = text.casefold().translate(_SPACES).split()
    negations = sum(t in _NEGATION_WORDS or t.endswith(("n't", "n’t")) for t in tokens)
    if not negations:
        return None
    if negations < 2 and not any(
        t in _NEGATED_WORDS or t.startswith(_NEGATED_PREFIXES) for t in tokens
    ):
        return None
    plain = _plain(text)
    first: tuple[int, int] | None = None  # (token index, start) of the clause's first negator
    for i, m in enumerate(_TOKEN.finditer(plain)):
        folded = m.group(0).casefold()
        kind = _negates(folded)
        if kind < 0:
            first = None  # the clause ends
            continue
        if kind == _NEGATED_TWO_WORDS:
            kind = (
                _NEGATED
                if plain[m.end() : m.end() + 4].casefold().startswith((" to", " of"))
                else 0
            )
        if not kind:
            continue
        if first is not None and i - first[0] <= _NEGATION_REACH:
            return plain[first[1] : m.end()]
        if kind == _NEGATOR_WORD:
            first = (i, m.start())
    return None


# --- numbers in another form, and chained lookups -----------------------------------------------

#: a number the state may write in another form: shorthand (1k, 2.5M), a percentage, a
#: number followed by its magnitude in words — and machine encodings of numbers
_NUMBER_FORM = re.compile(
    r"(?<![\w.,])\d+(?:[.,]\d+)?(?-i:k|K|M|bn|mn|BN)\b"
    r"|(?<![\w.,])\d+(?:[.,]\d+)?\s(?:thousand|million|billion|trillion|lakh|crore)\b"
    r"|(?<![\w.,])\d+(?:[.,]\d+)?\s?(?:%|per ?cent\b|percent\b)"
    r"|\b(?:in|as)\s+(?:cents|pence|minor units|basis points)\b",
    _I,
)
_MACHINE_FORM = re.compile(
    r"#(?=[0-9a-f]{0,5}[a-f])[0-9a-f]{6}\b|\brgba?\s*\("
    r"|\bhex(?:adecimal)?\s+(?:values?|codes?|colou?rs?|strings?|numbers?|digits?)\b"
    r"|\bbinary\s+(?:values?|encoding|representation|numbers?|digits?)\b"
    r"|\bbase ?64\b|\bbytecode\b|\bopcodes?\b|\bassembly\s+(?:instructions?|code)\b"
    r"|\b(?:unix|epoch|posix)\s+(?:time(?:stamps?)?|seconds|milliseconds)\b"
    r"|\b(?:scientific|exponential)\s+notation\b|\broman numerals?\b",
    _I,
)
_MACHINE_WORDS = frozenset(
    """hex hexadecimal rgb rgba binary base64 base bytecode opcode opcodes assembly unix epoch
    posix scientific exponential roman""".split()  # noqa: SIM905
)
_NUMBER_WORDS = frozenset(
    """cents pence minor basis thousand million billion trillion lakh crore percent per""".split()  # noqa: SIM905
)


#: what a number in another form needs, read cheaply before its pattern runs
_SHORTHAND = re.compile(r"\d(?:[kKM]|bn|mn|BN)\b")


@_per_text
def _number_form_hit(text: str) -> tuple[str, bool] | None:
    """The words of `text` that write a number in a form the state may not share, and whether
    it is a machine encoding (hex, binary, a timestamp …); or None."""
    words = _words(text)
    machine = not words.isdisjoint(_MACHINE_WORDS) or "#" in text
    number = (
        "%" in text or not words.isdisjoint(_NUMBER_WORDS) or _SHORTHAND.search(text) is not None
    )
    if not (machine or number):
        return None
    plain = _plain(text)
    found = []
    if machine and (m := _search(_MACHINE_FORM, plain)):
        found.append((m, True))
    if number and (m := _search(_NUMBER_FORM, plain)):
        found.append((m, False))
    if not found:
        return None
    m, is_machine = min(found, key=lambda hit: hit[0].start())
    return m.group(0).strip(), is_machine


#: a record the state holds in its own place, which a question may reach through another one
_ENTITY = (
    r"(?:customers?|clients?|users?|accounts?|owners?|holders?|authors?|senders?|recipients?|"
    r"requesters?|reporters?|assignees?|managers?|supervisors?|parents?|orders?|tickets?|"
    r"invoices?|payments?|transactions?|products?|subscriptions?|plans?|contracts?|"
    r"compan(?:y|ies)|organi[sz]ations?|employers?|teams?|agents?|vendors?|suppliers?|"
    r"merchants?|sellers?|buyers?|shipments?|deliver(?:y|ies)|records?|projects?|devices?|"
    r"profiles?|members?|contacts?|policies|policy|claims?|bookings?|reservations?|"
    r"parcels?|packages?|warehouses?|branch(?:es)?|stores?|departments?|employees?)"
)
_DETERMINER = r"(?:the|that|this|its|their|his|her|each|every|an?)"
#: words whose "'s" is "is" or "has", not a possessive
_CONTRACTED = r"(?:it|that|there|what|who|here|he|she|let|where|how|this|one)"
#: one hop from a record to another: "the customer of the order", "the ticket's order", "the
#: order referenced by the ticket", "whose …"
_HOP = re.compile(
    rf"\b{_ENTITY}\s+(?:of|behind)\s+{_DETERMINER}\b"
    rf"|\b(?!{_CONTRACTED}['’]s\b)[\w-]+['’]s?\s+(?:[\w-]+\s+)?{_ENTITY}\b(?!['’])"
    r"|\b(?:referenced|referred to|mentioned|named|cited|linked|listed|identified|attached|"
    r"assigned|associated|belonging|tied|connected|owned|placed|opened|raised|filed|"
    rf"submitted|created)\s+(?:by|in|to|with|from|on)\s+{_DETERMINER}\b"
    rf"|\b{_ENTITY}\s+(?:who|that|which)\s+(?:placed|opened|raised|filed|owns|owned|made|sent|"
    r"wrote|created|submitted|holds|booked|bought|ordered)\b"
    r"|\bwhose\b",
    _I,
)
#: a chain of lookups or inferences said outright
_CHAIN = re.compile(
    r"\blook(?:s|ing|ed)? up\b|\bcross[- ]?referenc\w*"
    r"|\b(?:matching|matches|match|corresponding to|corresponds to)\s+(?:the\s+|its\s+|their\s+)?"
    r"(?:[\w-]+\s+)?(?:id|ids|identifier|reference|key)\b"
    r"|\bthe\s+[\w-]+\s+of\s+the\s+[\w-]+\s+of\s+(?:the|its|their|that|this)\b"
    r"|\bwhoever\b[^.?!;]{0,40}\bwhose\b|\bif\b[^.?!;]{0,60}\bthen\b[^.?!;]{0,60}\bif\b"
    r"|\bwould have (?:been|had)\b|\bimplies? that\b[^.?!;]{0,40}\bwhich\b"
    r"|\bindirectly\b|\btransitively\b",
    _I,
)
#: the words a chain said outright needs one of, and those a hop does (two hops, two words)
_CHAIN_WORDS = frozenset(
    """look looks looking looked cross crossreference crossreferenced crossreferencing match
    matches matching corresponding corresponds whoever would implies imply indirectly
    transitively then""".split()  # noqa: SIM905
)
_HOP_WORDS = frozenset(
    """customer customers client clients user users account accounts owner owners holder holders
    author authors sender senders recipient recipients requester requesters reporter reporters
    assignee assignees manager managers supervisor supervisors parent parents order orders ticket
    tickets invoice invoices payment payments transaction transactions product products
    subscription subscriptions plan plans contract contracts company companies organisation
    organisations organization organizations employer employers team teams agent agents vendor
    vendors supplier suppliers merchant merchants seller sellers buyer buyers shipment shipments
    delivery deliveries record records project projects device devices profile profiles member
    members contact contacts policy policies claim claims booking bookings reservation
    reservations parcel parcels package packages warehouse warehouses branch branches store
    stores department departments employee employees referenced referred mentioned named cited
    linked listed identified attached assigned associated belonging tied connected owned placed
    opened raised filed submitted created whose""".split()  # noqa: SIM905
)
_SENTENCE = re.compile(r"[.?!;\n]")
#: a hop's words shown in a message, at most
_HOP_WORDS_SHOWN = 10


@_per_text
def _multi_hop_hit(text: str) -> str | None:
    """The words of `text` that chain lookups across the state — two hops in one sentence
    ("the customer of the order referenced by the ticket") or a chain said outright ("look
    up", "transitively") — or None."""
    words = _words(text)
    if len(words) < 4:
        return None
    hop_words = words & _HOP_WORDS
    if "'" in text or "’" in text:  # a possessive: "the ticket's order"
        hop_words |= {w.split("'")[0].split("’")[0] for w in words} & _HOP_WORDS
    chained = not words.isdisjoint(_CHAIN_WORDS) or text.count(" of ") >= 2
    plain = _plain(text) if chained or len(hop_words) >= 2 else ""
    if chained and (m := _search(_CHAIN, plain)):
        return m.group(0)
    if not plain:
        return None
    for sentence in _SENTENCE.split(plain):
        hops = list(_HOP.finditer(sentence))
        if len(hops) < 2 or _reported(sentence, hops[0].start()):
            continue
        shown = sentence[hops[0].start() : hops[1].end()].split()
        return " ".join(shown[:_HOP_WORDS_SHOWN])
    return None


# --- sample states ------------------------------------------------------------------------------


class StatePaths:
    """The paths a set's sample states have, worked out once (on first use) and shared by every
    check of the request: `orders.0.total`, its index-free form `orders.total`, and the strings
    the states hold (a backticked word that is in the state's text quotes it, it names no path).
    `states` may be a function that returns them: it is called only when some question names a
    path in backticks, so a check with none costs no read of the states."""

    def __init__(self, states: Sequence[Any] | Callable[[], Sequence[Any]]):
        self._source = states
        self._states: list[Any] | None = None
        self._paths: set[str] | None = None
        self._general: set[str] = set()
        self._strings: list[str] = []

    @property
    def states(self) -> list[Any]:
        if self._states is None:
            source = self._source
            self._states = list(source() if callable(source) else source)
        return self._states

    @property
    def has_structure(self) -> bool:
        return any(isinstance(s, dict | list) for s in self.states)

    def _walk(self) -> None:
        paths: set[str] = set()
        stack: list[tuple[Any, tuple[str, ...], tuple[str, ...]]] = [
            (s, (), ()) for s in self.states
        ]
        while stack:
            value, at, general = stack.pop()
            if at:
                paths.add(".".join(at))
                self._general.add(".".join(general))
            if isinstance(value, dict):
                stack.extend((v, (*at, str(k)), (*general, str(k))) for k, v in value.items())
            elif isinstance(value, list):
                stack.extend((v, (*at, str(i)), general) for i, v in enumerate(value))
            elif isinstance(value, str):
                self._strings.append(value.casefold())
        self._paths = paths

    def knows(self, path: str) -> bool:
        """Whether some sample state has `path` (dotted, `[0]` or `[]` for array items; a
        leading `state.` or `$.` is the state itself), or quotes it in its text."""
        if self._paths is None:
            self._walk()
        assert self._paths is not None
        parts = [
            index if index is not None and name is None else name
            for index, name in ((m.group(1), m.group(2)) for m in _PATH_PART.finditer(path))
        ]
        for drop in (0, 1):
            if drop and (not parts or parts[0] not in ("state", "$")):
                continue
            rest = parts[drop:]
            if not rest:
                return True
            exact = ".".join(p for p in rest if p != "")
            general = ".".join(p for p in rest if p != "" and whole_number(p) is None)
            if exact in self._paths or general in self._general:
                return True
        folded = path.casefold()
        return any(folded in s for s in self._strings)


def state_paths(states: Sequence[Any] | StatePaths | None) -> StatePaths | None:
    """A `StatePaths` of `states` (or the one given), None when there are no states."""
    if states is None or isinstance(states, StatePaths):
        return states
    return StatePaths(states)


# --- the check ----------------------------------------------------------------------------------


class _Lints:
    def __init__(self, ids: Sequence[str], paths: StatePaths | None):
        self.issues: list[spec.Issue] = []
        self.ids = list(ids)
        self.paths = paths

    def warn(self, loc: Loc, code: str, message: str, question: str, actual: Any = None) -> None:
        message = spec._shorter_ids(message, question)
        self.issues.append(
            spec.Issue(spec.path_of(loc), code, message, question, None, actual, loc)
        )

    # each rule -----------------------------------------------------------------------------

    def instructions(self, q: spec.Question, instructions: str) -> None:
        loc: Loc = ("questions", q.id, "instructions")
        if not instructions:
            if q.type == "noul" and not q.criteria:
                return  # nothing to judge at all: spec's error, not a second warning
            what = {"choice": "options", "score": "levels", "noul": "cases"}[q.type]
            self.warn(
                loc,
                "missing_instructions",
                f"{q.type} `{q.id}` has no instructions: the model reads only its {what}, and "
                "the id is never sent — write the question it answers",
                q.id,
            )
            return
        words = _WORD.findall(_QUOTED.sub(" ", instructions)) or _WORD.findall(instructions)
        if len(words) == 1:
            self.warn(
                loc,
                "one_word_instructions",
                f"the instructions of `{q.id}` are one word ({_quote(instructions)}); the id is "
                "never sent, so write the whole question the model answers (“Is this message "
                "unsolicited advertising?”, not “Spam?”)",
                q.id,
                instructions,
            )

    def counting(self, q: spec.Question, texts: list[tuple[Loc, str]]) -> None:
        for loc, text in texts:
            if words := _counting_hit(text):
                self.warn(
                    loc,
                    "counting",
                    f"{_quote(words)} asks the model to count or calculate; it does not do "
                    "arithmetic reliably — count in your code and ask about the result (or ask "
                    "one question per item)",
                    q.id,
                    words,
                )
                return

    def comparison(self, q: spec.Question, texts: list[tuple[Loc, str]]) -> None:
        for loc, text in texts:
            if words := _comparison_hit(text):
                self.warn(
                    loc,
                    "state_comparison",
                    f"{_quote(words)} compares numbers or dates inside the state; the model "
                    "reads them as words — compare in your code and put the outcome in the "
                    f"state ({_outcome(words)})",
                    q.id,
                    words,
                )
                return

    def numeric_representation(self, q: spec.Question, texts: list[tuple[Loc, str]]) -> None:
        for loc, text in texts:
            if hit := _number_form_hit(text):
                words, machine = hit
                if machine:
                    message = (
                        f"{_quote(words)} asks the model to read a machine encoding of a number "
                        "(hex, binary, a timestamp, base64); it reads names far better than codes "
                        "— convert in your code and put the name or a named bucket in the state "
                        "(`colour: red`, not `#ff0000`)"
                    )
                else:
                    message = (
                        f"{_quote(words)} writes a number in one form; the state may write it in "
                        "another (1000, 1,000, 1.0e3, “one thousand”; 12.5 % as 0.125) and the "
                        "model reads digits as text, not as values — normalise the number in "
                        "your code (one unit, one form) and put the outcome in the state "
                        "(`amount_band: over_1000`)"
                    )
                self.warn(loc, "numeric_representation", message, q.id, words)
                return

    def multi_hop(self, q: spec.Question, texts: list[tuple[Loc, str]]) -> None:
        for loc, text in texts:
            if words := _multi_hop_hit(text):
                self.warn(
                    loc,
                    "multi_hop",
                    f"{_quote(words)} makes the model chain lookups across the state (one record "
                    "found through another); every hop costs accuracy — resolve the chain in "
                    "your code and put the fact itself in the state (`ticket_customer_is_vip: "
                    "true`)",
                    q.id,
                    words,
                )
                return

    def generation(self, q: spec.Question, instructions: str) -> None:
        plain = _plain(instructions)
        for m in _GENERATION.finditer(plain):
            verb = (m.group("verb") or "").casefold()
            if verb in _GEN_WEAK and not _GEN_OBJECT.search(m.group("rest") or ""):
                continue
            if verb in _GEN_DETERMINED and not _GEN_DETERMINER.match(m.group("rest") or ""):
                continue
            if _reported(plain, m.start()):
                continue  # "does the user ask … to summarise …": a request the model recognises
            words = m.group(0).strip(" .!?;:\n")
            if m.group("verb"):
                words = f"{m.group('verb')}{m.group('rest')}".strip()
                words = " ".join(words.split()[:4])
            self.warn(
                ("questions", q.id, "instructions"),
                "generation",
                f"{_quote(words)} asks the model to write text; it returns only a "
                f"{_ANSWER[q.type]} — ask a question about the state instead, or use a "
                "generative model for the writing",
                q.id,
                words,
            )
            return

    def double_negation(self, q: spec.Question, texts: list[tuple[Loc, str]]) -> None:
        for loc, text in texts:
            if words := _double_negation_hit(text):
                self.warn(
                    loc,
                    "double_negation",
                    f"{_quote(words)} is a double negative; the model reads negations "
                    "literally and loses the thread — say it positively",
                    q.id,
                    words,
                )
                return

    def vague(self, q: spec.Question, instructions: str, texts: list[tuple[Loc, str]]) -> None:
        if any(loc[2] == "criteria" for loc, _ in texts):
            return  # described options, levels or cases anchor the word
        plain = _plain(instructions)
        for m in _VAGUE.finditer(plain):
            if _DEFINED.match(plain, m.end()):
                continue
            word = m.group(0)
            self.warn(
                ("questions", q.id, "instructions"),
                "vague_criterion",
                f"{_quote(word)} has no criteria to anchor it; the model guesses what you "
                f"mean — say what counts as {word.casefold()} here"
                + (
                    " in the `true` and `false` cases"
                    if q.type == "noul"
                    else " in the descriptions"
                ),
                q.id,
                word,
            )
            return

    def polarity(self, q: spec.Question, instructions: str) -> None:
        if q.type != "noul" or not isinstance(q.criteria, dict):
            return
        true_text = _entry_words(q.criteria.get("true"))
        false_text = _entry_words(q.criteria.get("false"))
        negative_question = bool(_ANY_NEGATION.search(_plain(instructions)))
        base: Loc = ("questions", q.id, "criteria")
        if true_text and (
            _READS_NO.match(true_text)
            or (not negative_question and _denies_the_question(true_text, instructions))
        ):
            self.warn(
                (*base, "true"),
                "inverted_polarity",
                f"the `true` case of `{q.id}` reads as a “no” ({_quote(true_text[:60])}); "
                "`true` is the case where the statement holds — swap the two cases, or "
                "restate the instructions so that yes means true",
                q.id,
                true_text,
            )
        elif false_text and _READS_YES.match(false_text):
            self.warn(
                (*base, "false"),
                "inverted_polarity",
                f"the `false` case of `{q.id}` reads as a “yes” ({_quote(false_text[:60])}); "
                "`false` is the case where the statement does not hold — swap the two cases, "
                "or restate the instructions so that yes means true",
                q.id,
                false_text,
            )

    def bare_levels(self, q: spec.Question, instructions: str) -> None:
        if q.type != "score" or not isinstance(q.criteria, list):
            return
        explained = _plain(instructions).casefold()
        bare = []
        for entry in q.criteria:
            words = _entry_words(entry)
            count = len(_WORD.findall(words))
            # an empty level is `undescribed_level` (spec); one the instructions explain is not bare
            if 0 < count <= _WORDS_PER_BARE_LEVEL and not re.search(
                rf"\b{re.escape(words.casefold())}\b\s*(?::|—|–|=|\(|means|is when)", explained
            ):
                bare.append(words)
        if len(bare) >= 2 and len(bare) * 2 >= len(q.criteria):
            shown = " / ".join(bare)
            self.warn(
                ("questions", q.id, "criteria"),
                "bare_levels",
                f"the levels of `{q.id}` are bare labels ({_quote(shown)}); the model cannot "
                "tell where one ends and the next begins — describe the situation each level "
                "covers (“frustrated, but still polite”, not “medium”)",
                q.id,
                bare,
            )

    def other_questions(self, q: spec.Question, instructions: str) -> None:
        named = []
        for other in self.ids:
            if other == q.id or len(other) < 2 or other not in instructions:
                continue
            if self._names(other, instructions):
                named.append(other)
        if named:
            shown = ", ".join(f"`{n}`" for n in named[:3])
            self.warn(
                ("questions", q.id, "instructions"),
                "names_other_question",
                f"the instructions of `{q.id}` name question {shown}; questions are "
                "independent — the model never sees another question or its answer — so put "
                "what it needs in the state, or combine the answers in your code",
                q.id,
                named,
            )

    def _names(self, other: str, text: str) -> bool:
        escaped = re.escape(other)
        if f"`{other}`" in text:
            return self.paths is None or not self.paths.knows(other)
        plain = _plain(text)
        if _DISTINCTIVE_ID.search(other):
            return re.search(rf"(?<![\w-]){escaped}(?![\w-])", plain) is not None
        return (
            re.search(
                rf"\b(?:question|answer (?:to|of|for)|result of|outcome of|output of)\s+"
                rf"{escaped}\b|\b{escaped}(?:['’]s)?\s+(?:question|answer|result)\b"
                rf"|\b{escaped}\s+(?:is|was|=|==|equals)\s+(?:true|false|yes|no)\b",
                plain,
                _I,
            )
            is not None
        )

    def state_paths(self, q: spec.Question, texts: list[tuple[Loc, str]]) -> None:
        if self.paths is None:
            return
        for loc, text in texts:
            if "`" not in text:
                continue
            if not self.paths.has_structure:
                return  # text states (or none): a backticked word quotes, it names no path
            for raw in _BACKTICKED.findall(text):
                path = raw.strip()
                if not _PATH.fullmatch(path) or path in self.ids:
                    continue  # a command or a phrase, not a path; a question id: named above
                if not self.paths.knows(path):
                    self.warn(
                        loc,
                        "unknown_state_path",
                        f"`{path}` is in none of the sample states; the model finds nothing "
                        "there — fix the path, or add a sample state that has it",
                        q.id,
                        path,
                    )
                    return

    def identical(self, questions: Mapping[str, spec.Question]) -> None:
        # by type, instructions and criteria size first: the criteria are read only on a match
        buckets: dict[tuple[str, str, int], list[spec.Question]] = {}
        for q in questions.values():
            instructions = spec.entry_text(q.instructions)
            if not instructions and not q.criteria:
                continue
            size = len(q.criteria) if isinstance(q.criteria, dict | list) else -1
            buckets.setdefault((q.type, _fold(instructions), size), []).append(q)
        for bucket in buckets.values():
            if len(bucket) < 2:
                continue
            seen: dict[str, str] = {}
            for q in bucket:
                try:
                    criteria = json.dumps(q.criteria, sort_keys=True, ensure_ascii=False)
                except (TypeError, ValueError):
                    continue
                first = seen.setdefault(_fold(criteria), q.id)
                if first != q.id:
                    self.warn(
                        ("questions", q.id),
                        "identical_questions",
                        f"`{q.id}` asks exactly what `{first}` asks; one request answers it "
                        "twice — remove one, or change what it asks",
                        q.id,
                        first,
                    )


_ANSWER: Final = {
    "choice": "choice among its options",
    "score": "level on its rubric",
    "noul": "probability",
}


_DATE_WORDS = re.compile(
    r"\b(?:date|dates|deadline|timestamp|due|expir\w*|today|yesterday|tomorrow|now|days?|"
    r"weeks?|months?|years?|hours?|minutes?|before|after|prior|since|until|earlier|later|"
    r"sooner|older|younger|recent\w*|earliest|latest|oldest|newest|past|ago)\b",
    _I,
)


def _outcome(words: str) -> str:
    """An example of the fact to put in the state instead of the comparison."""
    return "`overdue: true`" if _DATE_WORDS.search(words) else "`over_limit: true`"


def _fold(text: str) -> str:
    return " ".join(re.sub(r"[^\w]+", " ", text.casefold()).split())


def check(
    questions: Mapping[str, spec.Question],
    *,
    sample_states: Sequence[Any] | StatePaths | None = None,
    ids: Sequence[str] | None = None,
) -> list[spec.Issue]:
    """The lints of parsed questions, as warnings. `ids` are every question id of the set (for
    the names-another-question lint; the parsed ids when not given); `sample_states` are the
    set's sample states, or a `StatePaths` built once per request — without them the state-path
    lint does not run."""
    lints = _Lints(list(questions) if ids is None else ids, state_paths(sample_states))
    for q in questions.values():
        instructions = spec.entry_text(q.instructions)
        texts = _texts(q)
        lints.instructions(q, instructions)
        lints.counting(q, texts)
        lints.comparison(q, texts)
        lints.numeric_representation(q, texts)
        lints.multi_hop(q, texts)
        lints.generation(q, instructions)
        lints.double_negation(q, texts)
        lints.vague(q, instructions, texts)
        lints.polarity(q, instructions)
        lints.bare_levels(q, instructions)
        if instructions:
            lints.other_questions(q, instructions)
        lints.state_paths(q, texts)
    lints.identical(questions)
    return lints.issues
