"""Secret redaction for every free text loopx writes. Pure (no I/O, no network).

Three layers, each found to earn its keep on a corpus of 89 credential cases and 85 ordinary
lines (tests/secretkit.py; none redacted by mistake, all 89 redacted):

- **shapes**: the regex plugins of detect-secrets (maintained upstream: AWS, GitHub, GitLab,
  Slack, Stripe, Twilio, JWT, npm, PyPI, SendGrid, Square, Azure, Discord, Telegram, basic
  auth in URLs...), plus the shapes it lacks (Google API keys, npm and Docker Hub tokens,
  Vault, Square access tokens, Stripe test keys, Hugging Face, Anthropic, `Authorization:`
  and `Bearer` values, `curl -u user:password`, passwords in URLs with an empty user);
- **assignments**: ``key = value`` / ``key: value`` / ``"key": "value"`` where the key names a
  password (any value of 4+ characters), a token or key (a value that looks like a
  credential), or anything else with a long high-entropy base64 value; placeholders, code
  references (``password=password``, ``os.environ[...]``), digests and ids are left alone;
- **the gitleaks default rules** (:mod:`loopx.redaction.gitleaks`, a packaged data file) and
  **classes** with no vendor keyword: a label before an assignment, secrets in command-line
  flags, URL query signatures, base64 ``user:pass``, netrc lines (issue 22);
- **private key blocks**, across lines, and the values of environment variables whose names
  look like credentials (``GITHUB_TOKEN``...), which a command's output may echo.

Only detect-secrets' plugin classes, their regexes (``denylist``) and ``analyze_string`` are
used, never its settings, baseline or ``analyze_line`` (which may verify a secret over the
network). It is imported on the first text a cheap gate cannot clear, not before: a command
that writes no free text, or only ordinary text, never loads it (~80 ms, mostly `requests`).

Redaction is line-oriented so that output can be fed through it as it streams; a
:class:`Redactor` keeps the one piece of state that spans lines (inside a private key block).
:func:`scrub` is what the ledger's write path applies to every free-text field of every event
(``Ledger(scrub=...)``, set by :func:`loopx.ops.ledgers.open_ledger`) and to transcripts.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Mapping
from typing import Any

from loopx.redaction import gitleaks, shapes

MARK = "[REDACTED]"
MIN_SECRET_LEN = 6  # shorter environment values ("1", "true", "dev") would mangle text

# Environment variable names whose values are treated as secrets.
_SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|API_?KEY|_KEY$|^KEY$|CREDENTIAL|^AWS_|AUTH(?!OR)|"
    r"COOKIE",
    re.IGNORECASE,
)
# Names that match the pattern above but hold a location or a setting, not a secret.
_NOT_SECRET = re.compile(r"_(SOCK|PATH|DIR|FILE)$|^AWS_(REGION|DEFAULT_REGION|PROFILE)$", re.I)
# An argument after one of these options is a secret (`--password hunter2`, `--token X`).
_SECRET_OPTION = re.compile(r"^--?[\w-]*(password|passwd|token|secret|api-?key)$", re.I)
# An argument after a key that names a secret (`{"password":` `"x"}` split by a shell).
_SECRET_KEY_ARG = re.compile(r"(?i)(?:password|passwd|passphrase|secret|token|api[-_]?key)"
                             r"[\"']?\s*[:=]$")
_OPTION_VALUE = re.compile(r"^(--?[\w-]*(?:password|passwd|token|secret|api-?key)=)(.+)$", re.I)

# --------------------------------------------------------------------------- extra shapes
# Shapes detect-secrets 1.5.0 has no plugin for (or only in a narrow context).  The named
# group "v" (if any) is the secret; otherwise the whole match is.  Anchored on a distinctive
# vendor prefix, so they are cheap and precise.
_EXTRA_SHAPES = [
    # GitHubTokenDetector knows gh[pousr]_ only, not fine-grained PATs.
    r"\bgithub_pat_[A-Za-z0-9_]{22,}",
    # SlackDetector knows xox?- tokens and webhooks, not app-level tokens.
    r"\bxapp-\d-[A-Za-z0-9]+-\d+-[A-Za-z0-9]+",
    # No Google plugin: API keys and OAuth client secrets.
    r"\bAIza[0-9A-Za-z_-]{35}",
    r"\bGOCSPX-[0-9A-Za-z_-]{28}",
    # NpmDetector only matches inside an .npmrc line (`//host/:_authToken=`).
    r"\bnpm_[A-Za-z0-9]{36}",
    # No Docker Hub plugin.
    r"\bdckr_(?:pat|oat)_[A-Za-z0-9_-]{27,}",
    # No Vault plugin: hvs./hvb./hvr. tokens and legacy s.<24> service tokens (mixed case+digit).
    r"\bhv[sbr]\.[A-Za-z0-9_-]{24,}",
    r"(?<![\w.])s\.(?=[A-Za-z0-9]{0,23}\d)(?=[A-Za-z0-9]{0,23}[a-z])(?=[A-Za-z0-9]{0,23}[A-Z])"
    r"[A-Za-z0-9]{24}(?![\w.])",
    # SquareOAuthDetector knows sq0csp- (app secret) only, not access tokens.
    r"\bsq0atp-[0-9A-Za-z_-]{22}",
    r"\bEAAA[0-9A-Za-z_-]{60}",
    # StripeDetector knows sk_live_/rk_live_ only; test keys are credentials too.
    r"\b[spr]k_(?:live|test)_[0-9A-Za-z]{24,}",
    # No Heroku v2 / Shopify / Hugging Face plugins.
    r"\bHRKU-AA[0-9A-Za-z_-]{58}",
    r"\bshp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}",
    r"\bhf_[A-Za-z]{34}",
    # OpenAIDetector needs "T3BlbkFJ" flanked by 20 alnum (misses most sk-proj- keys);
    # none for Anthropic (sk-ant-api03-...).  One generic sk- rule, requiring a digit.
    r"\bsk-(?=[A-Za-z0-9_-]{0,200}\d)[A-Za-z0-9_-]{20,}",
    # `curl -u user:password` (the user is kept).
    r"(?:^|\s)(?:-u|--user)[ =]?[\"']?[^\s:\"'@]+:(?P<v>[^\s\"'@]+)",
    # BasicAuthDetector requires a non-empty user (misses redis://:pw@host).
    r"://[^\s:/@]*:(?P<v>[^\s/@]+)@",
    # Authorization headers: keep the scheme, redact the credential.
    r"(?i:\b(?:proxy-)?authorization)[\"']?\s*[:=]\s*[\"']?"
    r"(?:(?i:bearer|basic|token|digest|negotiate|ntlm|apikey|sso-key|hmac)\s+)?"
    r"(?P<v>(?!\[REDACTED\])[^\s\"',;]{8,})",
    r"\b(?i:bearer)\s+(?P<v>(?!\[REDACTED\])[A-Za-z0-9._~+/=-]{16,})",
    # Vendor prefixes that gitleaks knows only beside a keyword (New Relic), or not at all.
    r"\bwhsec_[A-Za-z0-9+/=]{24,}",
    r"\bNR(?:AK|II|JS|AA|AL)-[A-Za-z0-9]{19,40}",
    r"\boy2[a-z0-9]{43}",
    r"\bpypi-AgE[A-Za-z0-9_-]{50,}",
    r"\bsntr[ysu]_[A-Za-z0-9+/=_]{40,}",
    r"\bglsa_[A-Za-z0-9_]{32,}",
    # Webhook URLs whose path is the credential (gitleaks knows Slack's and Teams').
    r"discord(?:app)?\.com/api/webhooks/\d+/(?P<v>[\w-]{40,})",
    # A URL whose userinfo is one bare token: a Sentry DSN, `https://<token>@github.com/...`.
    r"://(?P<v>[A-Za-z0-9_-]{16,})@",
    # Secrets as command-line arguments: `mysql -pSECRET`, `sshpass -p X`, `redis-cli -a X`
    # (for `--password X` see _FLAG_VALUE: it needs a check).
    r"\b(?:mysql\w*|mariadb\w*)\b[^|;&\n]*?\s[\"']?-p(?P<v>[^\s\"'|;&]+)",
    r"\bsshpass\s+[\"']?-p[\"']?\s*[\"']?(?P<v>[^\s\"'|;&]+)",
    r"\bredis-cli\b[^|;&\n]*?\s[\"']?-a[\"']?\s+[\"']?(?P<v>[^\s\"'|;&]+)",
    # Signatures and tokens in URL query strings (`?sig=`, `X-Amz-Signature=`, `access_token=`).
    r"[?&](?i:(?:[\w.-]*[_.-])?(?:sig|signature|token|secret|password|passwd|pwd|apikey|api[_-]key"
    r"|credential|auth)|key|code)=(?P<v>(?!\[REDACTED\])[^&\s#\"'<>]{6,})",
    # netrc lines: `machine host login me password X` (also across lines: `password X` alone).
    r"\b(?:machine[ \t]+\S+|default|login[ \t]+\S+)(?:[ \t]+(?:login|account)[ \t]+\S+)*"
    r"[ \t]+password[ \t]+(?P<v>(?!\[REDACTED\])\S+)",
    r"^[ \t]*password[ \t]+(?P<v>(?!\[REDACTED\])\S+)[ \t]*$",
]
# A leading \b defeats the regex engine's literal-prefix scan (0.5 us -> 0.07 us per
# pattern); it is stripped and the word boundary is checked on the (rare) match instead.
_EXTRA_RES = [(re.compile(p[2:]), True) if p.startswith("\\b") else (re.compile(p), False)
              for p in _EXTRA_SHAPES]

# --------------------------------------------------------------------------- private keys
_KEY_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----")
_KEY_END = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----")

# --------------------------------------------------------------------------- assignments
# key = value | key: value | "key": "value" | KEY=value | key := value | key => value
_ASSIGN = re.compile(
    r"""(?<![\w])(?P<key>[A-Za-z_][\w.\-]{0,80}?)["'\]]?[ \t]*
        (?:=>|:=|==?|:(?![/:]))[ \t]*
        (?:(?P<q>["'`])(?P<qv>[^"'`]*)(?P=q)?|(?P<uv>[^\s"'`,;&)}\]]*[^\s"'`,;&)}\]:.]))""",
    re.X,
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SPLIT = re.compile(r"[_\-.\s]+")
# Password-class words: any non-placeholder value >= 4 chars is a secret (even "hunter2").
_PASSWORD_WORDS = {"password", "passwd", "passphrase", "pwd", "secret", "secrets",
                   "credential", "credentials", "contrasena", "privatekey"}
# "pass" only with a qualifier (DB_PASS, smtp_pass): alone it is prose ("single pass: ...").
# Token-class words: the value must also look like a credential (mixed classes, >= 8 chars).
_TOKEN_WORDS = {"token", "tokens", "apikey", "auth", "authtoken", "authorization", "cookie",
                "sessionid", "signature", "bearer", "jwt", "dsn"}
# Not "session" (loopx's own vocabulary: session.opened, session_slots) nor "sig" (utf_8_sig).
# Inside one word: PGPASSWORD, clientSecret->client_secret anyway, csrftoken, authToken.
_PASSWORD_SUB = re.compile(r"password|passwd|passphrase|secret|credential")
_TOKEN_SUB = re.compile(r"token(?!iz)|apikey")
# `<qualifier>_key` is a credential (SECRET_KEY, tls.key, APP_KEY); other `*_key`s are
# lookup keys (cache_key, sort_key, primary_key, object_key) and stay unless high-entropy.
_KEY_QUALIFIERS = {"api", "access", "private", "client", "account", "secret", "service",
                   "signing", "encryption", "master", "auth", "db", "database", "license",
                   "app", "tls", "ssl", "session", "webhook", "hmac", "jwt", "aes", "shared",
                   "consumer", "admin", "deploy", "root", "sas", "storage", "subscription",
                   "write", "crypto", "cipher", "priv"}
# Words that make a key public or an identifier, whatever else it says.
_PUBLIC_WORDS = {"public", "pub", "publishable"}
# A trailing component that makes the key describe the secret rather than hold it.
_META_SUFFIX = {"file", "path", "dir", "sock", "type", "name", "names", "id", "ids", "url",
                "uri", "endpoint", "len", "length", "size", "count", "expires", "expiry",
                "expiration", "ttl", "at", "version", "field", "prefix", "hint", "policy",
                "reset", "required", "enabled", "env", "var", "header", "format", "mode",
                "number", "num", "index", "idx", "pos", "taken", "kind", "class",
                "min", "max", "source", "provider", "method", "scope", "scopes", "usage"}
_NOT_SECRET_KEYS = {"pwd", "oldpwd", "author", "authority"}
# Neutral keys whose values are digests/ids, never secrets.
_DIGEST_KEYS = {"integrity", "digest", "hash", "checksum", "sha", "sha1", "sha256", "sha512",
                "etag", "commit", "revision", "rev", "md5", "fingerprint"}
_DIGEST_VALUE = re.compile(r"^(?:sha\d+|md5|blake2b?|sha3-\d+)[-:=]", re.I)
_PLACEHOLDER = re.compile(
    r"^(?:\*+|\*?\w*\*|x{3,}|X{3,}|\.{3,}|null|none|nil|true|false|undefined|redacted"
    r"|\[REDACTED.*|<[^>]*>|\{[^}]*\}|%\(?\w*\)?s?|\$\w+|\$\{.*\}?)$",
    re.I,
)
# Documentation placeholders ("your-api-key-here", "<token>", "example-secret").
_DOC_PLACEHOLDER = re.compile(
    r"^(?:your|my)[-_]|[-_](?:here|goes[-_]here)$|^(?:example|placeholder|dummy|changeme)", re.I
)
# Unquoted values that are code, not literals: `password=password`, `self.secret = cfg.secret`,
# `if password == confirm_password:`.  (Quoted values are literals and are never excused.)
_CODE_REF = re.compile(
    r"^(?:[A-Za-z_][A-Za-z_]*(?:\.[A-Za-z_][A-Za-z_]*)+"     # dotted chain, no digits
    r"|[a-z]+(?:_[a-z]+)+"                                 # snake_case, no digits
    r"|[A-Za-z_]*(?i:pass|pwd|secret|token|key|auth|cred)[A-Za-z_]*"  # names a secret
    r"|[A-Z][a-z]+(?:[A-Z][a-z]+)*"                        # CapWords: a class / enum member
    r"|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"                      # CONSTANT_NAME
    r"|[(\[{<$%].*"                                        # tuple, list, template, $VAR, %s
    r"|bool|str|int|float|bytes|None|Optional|Any|list|dict)$"  # type annotations
)
_INDIRECT = re.compile(r"^[A-Za-z_][\w.]*[\[(]|^(?:os\.environ|process\.env|getenv)\b")
_PATH = re.compile(r"^(?:~|\.{1,2})?/[\w.\-/]*$")
_ULID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
_B64_CHARS = re.compile(r"^[A-Za-z0-9+/=_-]+$")
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")

# Thresholds, tuned on the corpus in tests/secretkit.py.
MIN_PASSWORD_LEN = 4   # password=abcd is still a password
MIN_TOKEN_LEN = 8      # token-class values shorter than this are flags/enums, not credentials
MIN_ENTROPY_LEN = 20   # neutral keys: only long values...
B64_ENTROPY = 4.5      # ...whose base64-charset Shannon entropy beats detect-secrets' default

_KEYWORD_HINT = re.compile(r"pass|pwd|secret|token|key|auth|cred|cookie|session|sig|bearer|jwt|dsn",
                           re.I)


# --------------------------------------------------------------------------- detect-secrets
class _DetectSecrets:
    """The detect-secrets pieces we use, loaded once (about 80 ms, mostly `requests`)."""

    # An IP address is not a credential; PrivateKeyDetector only flags the BEGIN header
    # (useless for redaction: the key body is on the following lines), handled here instead.
    EXCLUDE = {"IPPublicDetector", "PrivateKeyDetector"}
    # Plugins whose patterns are loose enough to need a token-likeness check on the hit
    # (Artifactory's `AP[\dA-F]\w{8,}` matches CamelCase words like "APEngineController").
    NEEDS_DIGIT = {"ArtifactoryDetector"}

    def __init__(self) -> None:
        self._loaded: tuple[list[Any], Any, tuple[Any, ...]] | None = None

    def _load(self) -> tuple[list[Any], Any, tuple[Any, ...]]:
        # Imported here, on the first text a rule needs it for: every write of an ordinary
        # title or note, and every command that writes no free text, runs without it.
        if self._loaded is not None:
            return self._loaded
        import logging
        import warnings

        show = warnings.showwarning
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.filters import heuristic
        from detect_secrets.plugins.base import RegexBasedDetector
        from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString

        if warnings.showwarning is not show:  # detect_secrets.core.log: captureWarnings(True)
            logging.captureWarnings(False)
        classes: list[type] = list(get_mapping_from_secret_type_to_class().values())
        plugins = [cls() for cls in classes
                   if issubclass(cls, RegexBasedDetector) and cls.__name__ not in self.EXCLUDE]
        filters = (heuristic.is_templated_secret, heuristic.is_prefixed_with_dollar_sign,
                   heuristic.is_not_alphanumeric_string, heuristic.is_sequential_string)
        self._loaded = (plugins, Base64HighEntropyString().calculate_shannon_entropy, filters)
        return self._loaded

    @property
    def plugins(self) -> list[Any]:
        return self._load()[0]

    def b64_entropy(self, value: str) -> float:
        return float(self._load()[1](value))

    @property
    def value_filters(self) -> tuple[Any, ...]:
        return self._load()[2]

    def spans(self, line: str) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        for plugin in self.plugins:
            # analyze_string is the plugin's own verdict (JwtTokenDetector validates the JSON
            # parts there); it yields values, sometimes only a capture group ("ghp" for a
            # GitHub token), so we re-run the denylist with finditer to get positions.
            values = set(plugin.analyze_string(line))
            if not values:
                continue
            for rx in plugin.denylist:
                for m in rx.finditer(line):
                    texts = {m.group(0), *(g for g in m.groups() if g)}
                    if not texts & values:
                        continue
                    span = _trim(line, *_match_span(m))
                    if span is None:
                        continue
                    if type(plugin).__name__ in self.NEEDS_DIGIT and not re.search(
                        r"\d", line[span[0]:span[1]]
                    ):
                        continue
                    out.append(_extend(line, *span))
        return out


_DS: _DetectSecrets | None = None


def _ds() -> _DetectSecrets:
    global _DS
    if _DS is None:
        _DS = _DetectSecrets()
    return _DS


def _match_span(m: re.Match[str]) -> tuple[int, int]:
    """The secret's span: capture groups that are not a leading prefix, else the match."""
    inner = [
        (m.start(i), m.end(i))
        for i in range(1, (m.re.groups or 0) + 1)
        if m.start(i) != -1 and m.end(i) > m.start(i) and m.start(i) != m.start()
    ]
    if inner:
        return min(s for s, _ in inner), max(e for _, e in inner)
    return m.start(), m.end()


_ASSIGN_PREFIX = re.compile(r"[A-Za-z_][\w.-]*\s*[=:]\s*[\"']?")


def _trim(line: str, start: int, end: int) -> tuple[int, int] | None:
    """Drop delimiters some plugin regexes include, and a leading `Key=` (Azure)."""
    while start < end and line[start] in " \t\"'=:":
        start += 1
    while end > start and line[end - 1] in " \t\"'":
        end -= 1
    m = _ASSIGN_PREFIX.match(line, start, end)
    if m and end - m.end() >= 8:
        start = m.end()
    return (start, end) if end > start else None


def _extend(line: str, start: int, end: int) -> tuple[int, int]:
    """Extend a match to the end of its token (StripeDetector matches 24 of 99 chars; the
    JWT regex stops before the signature)."""
    n = len(line)
    while end < n and (
        line[end] in _TOKEN_CHARS
        or (line[end] == "." and end + 1 < n and line[end + 1] in _TOKEN_CHARS
            and "." in line[start:end])
    ):
        end += 1
    return start, end


# --------------------------------------------------------------------------- assignments
def _key_words(key: str) -> list[str]:
    return [w for w in _SPLIT.split(_CAMEL.sub("_", key).lower()) if w]


def _key_class(key: str) -> str:
    """'password', 'token', 'neutral' (entropy decides) or 'public' (never) for a key."""
    words = _key_words(key)
    if not words or key.lower() in _NOT_SECRET_KEYS or _PUBLIC_WORDS & set(words):
        return "public"
    if words[-1] in _META_SUFFIX:
        return "public"
    if any(w in _PASSWORD_WORDS or _PASSWORD_SUB.search(w) for w in words) or (
        "pass" in words[1:]
    ):
        return "password"
    if any(w in _TOKEN_WORDS or _TOKEN_SUB.search(w) for w in words) or (
        words[-1] == "key" and len(words) > 1 and words[-2] in _KEY_QUALIFIERS
    ):
        return "token"
    return "neutral"


def _looks_like_credential(value: str) -> bool:
    """Token-class values: no spaces, >= 8 chars, two character classes, and a digit
    unless long (a pure-letter value under 20 chars is a word or an identifier)."""
    if len(value) < MIN_TOKEN_LEN or value.isdigit() or any(c.isspace() for c in value):
        return False
    classes = sum(
        bool(re.search(c, value)) for c in (r"[a-z]", r"[A-Z]", r"\d", r"[^A-Za-z0-9]")
    )
    return classes >= 2 and (len(value) >= 20 or any(c.isdigit() for c in value))


def _is_placeholder(value: str, ds: _DetectSecrets) -> bool:
    if _PLACEHOLDER.match(value) or _INDIRECT.match(value):
        return True
    return any(f(value) for f in ds.value_filters)


def _decoded_text(value: str) -> str | None:
    """The value base64-decoded, if that gives printable text (so: not random bytes)."""
    try:
        raw = base64.b64decode(value + "=" * (-len(value) % 4), altchars=b"-_"
                               if "-" in value or "_" in value else None, validate=False)
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return None
    printable = sum(c.isprintable() or c in "\n\t" for c in text)
    return text if text and printable / len(text) > 0.95 else None


def _assignment_spans(line: str, ds: _DetectSecrets, depth: int = 0) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for m in _ASSIGN.finditer(line):
        group = "qv" if m.group("q") else "uv"
        value = m.group(group)
        if not value:
            continue
        key = m.group("key")
        if _OP.search(value) and depth < 4:  # a label before the assignment: `env: TOKEN=x`
            off = m.start(group)
            out.extend((s + off, e + off) for s, e in _assignment_spans(value, ds, depth + 1))
        if m.start() and line[m.start() - 1] == "/":
            continue  # a URL path segment or userinfo (`/bot123:abc`, `://user:pw@`), not a key
        kind = _key_class(key)
        if kind == "public":
            continue
        if kind != "neutral":
            if _is_placeholder(value, ds) or _PATH.match(value) or _DOC_PLACEHOLDER.search(value):
                continue
            if not m.group("q") and _CODE_REF.match(value):
                continue
            if m.group("q") == "`" and any(c.isspace() for c in value):
                continue  # a markdown code span around prose, not a quoted literal
            tight = not m.group("q") and line[m.start(group) - 1] == ":"
            if tight and not _looks_like_credential(value):
                continue  # `passwd:shell`, `key:value` labels need a credential-like value
            if kind == "password" and len(value) >= MIN_PASSWORD_LEN:
                out.append(m.span(group))
            elif kind == "token" and _looks_like_credential(value):
                out.append(m.span(group))
            continue
        # Neutral key: only a long, random-looking base64/base64url value, in a real
        # assignment (`k=v`, `k: v`, `"k": "v"`; not `h1:abc`, `sha256:abc`, `bot1:abc`).
        op_end = m.start(group) - (1 if m.group("q") else 0)
        if line[op_end - 1] == ":" and not m.group("q"):
            continue
        if (
            len(value) < MIN_ENTROPY_LEN
            or _ULID.match(value)
            or list(value) == sorted(value)  # an alphabet ("0123...XYZ"), not random
            or not _B64_CHARS.match(value)
            or _key_words(key)[-1] in _DIGEST_KEYS
            or _DIGEST_VALUE.match(value)
            or ds.b64_entropy(value) <= B64_ENTROPY
        ):
            continue
        text = _decoded_text(value)
        if text is not None and (depth > 0 or not _find_spans(text, ds, depth + 1)):
            continue  # base64 of ordinary text (with no secret inside): not a secret
        out.append(m.span(group))
    return out


# Cheap gates (most output lines have no secret; ~1 us instead of ~30 us of regexes).
# Shapes: every plugin/extra pattern needs a run of >= 16 [A-Za-z0-9_-] (the shortest real
# credential body here is 16+), except URL userinfo, Authorization headers and `-u u:p`.
_SHAPE_GATE = re.compile(r"[A-Za-z0-9_-]{16}|://|(?i:authoriz|bearer)|(?:^|\s)(?:-u|--user)[ =]")
# Assignments: an operator, and a secret-ish key word or a long base64-ish run (entropy tier).
_ASSIGN_GATE = re.compile(_KEYWORD_HINT.pattern + r"|[A-Za-z0-9+/=_-]{20}", re.I)
_OP = re.compile(r"[=:]")
# Secrets with no 16-character run and no `key=`: `--password x`, `mysql -px`, `Basic dTpw`,
# netrc lines, `?sig=x`.
_CLASS_GATE = re.compile(r"(?i:passw|passphrase|pwd|token|secret|api-?key|basic\s|mysql|mariadb"
                         r"|sshpass|redis-cli|machine\s)|[?&][\w.-]*=")


# Some plugin regexes are quadratic on long lines (JwtTokenDetector on "eyJeyJeyJ...",
# NpmDetector's `//.+/:_authToken` on many "//"): 100 KB of either took 1.7-2.6 s.  Long
# lines are scanned for shapes in overlapping windows (credentials are < 1.5 KB).
_WINDOW, _OVERLAP = 4096, 1536


def _shape_spans(text: str, ds: _DetectSecrets) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    if _SHAPE_GATE.search(text) or _CLASS_GATE.search(text):
        spans.extend(ds.spans(text))
        spans.extend(_extend(text, *span) for span in gitleaks.rules().spans(text))
        for rx, boundary in _EXTRA_RES:
            for m in rx.finditer(text):
                if boundary and m.start() and (text[m.start() - 1].isalnum() or text[m.start() - 1] == "_"):
                    continue
                spans.append(m.span("v") if "v" in rx.groupindex else m.span())
        spans.extend(shapes.flag_spans(text))
        spans.extend(shapes.basic_spans(text))
    return spans


def _find_spans(text: str, ds: _DetectSecrets, depth: int = 0) -> list[tuple[int, int]]:
    if len(text) <= _WINDOW:
        spans = _shape_spans(text, ds)
    else:
        spans = []
        for off in range(0, len(text) - _OVERLAP, _WINDOW - _OVERLAP):
            for s, e in _shape_spans(text[off:off + _WINDOW], ds):
                spans.append(_extend(text, s + off, e + off))  # a token cut by the window
    if _OP.search(text) and _ASSIGN_GATE.search(text):
        spans.extend(_assignment_spans(text, ds, depth))
    return spans


def _maybe(text: str) -> bool:
    """False when no rule can match (then detect-secrets is not even imported)."""
    return bool(_SHAPE_GATE.search(text) or _CLASS_GATE.search(text)
                or (_OP.search(text) and _ASSIGN_GATE.search(text)))


def _apply(text: str, spans: list[tuple[int, int]]) -> str:
    if not spans:
        return text
    spans.sort()
    merged = [list(spans[0])]
    for s, e in spans[1:]:
        if s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    for s, e in reversed(merged):
        if text[s:e] != MARK:
            text = text[:s] + MARK + text[e:]
    return text


class Redactor:
    """Redacts lines of text; one instance per stream (it remembers open key blocks)."""

    def __init__(self, secrets: Mapping[str, str] | None = None) -> None:
        # Longest first, so a secret that contains another is replaced whole.
        self._secrets = sorted((secrets or {}).items(), key=lambda kv: -len(kv[0]))
        self._in_key = False

    def line(self, text: str) -> str:
        """One line (with or without its newline), redacted."""
        if self._in_key:
            end = _KEY_END.search(text)
            if end is None:
                return MARK + "\n" if text.endswith("\n") else MARK
            self._in_key = False
            return self._inline(text[end.start():])
        begin = _KEY_BEGIN.search(text)
        if begin is not None:
            end = _KEY_END.search(text, begin.end())
            if end is None:
                self._in_key = True
                return text[: begin.end()] + " " + MARK + ("\n" if text.endswith("\n") else "")
            text = text[: begin.end()] + MARK + text[end.start():]
        return self._inline(text)

    def _inline(self, text: str) -> str:
        for value, name in self._secrets:
            if value in text:
                text = text.replace(value, f"[REDACTED:{name}]")
        if _maybe(text):
            text = _apply(text, _find_spans(text, _ds()))
        return text

    def text(self, text: str) -> str:
        """A whole text, redacted (line by line, keeping line ends)."""
        return "".join(self.line(part) for part in text.splitlines(keepends=True))


def secret_values(environ: Mapping[str, str], *, every: bool = False) -> dict[str, str]:
    """value -> variable name, for the environment variables that look like credentials
    (``every``: for all of them, whatever their name; values too short to redact excepted)."""
    found: dict[str, str] = {}
    for name, value in environ.items():
        if not every and (_NOT_SECRET.search(name) or not _SECRET_NAME.search(name)):
            continue
        value = value.strip()
        if len(value) >= MIN_SECRET_LEN:
            found.setdefault(value, name)
    return found


def redact(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``text`` with secret-looking environment values and credentials replaced."""
    return Redactor(secret_values(environ or {})).text(text)


def scrub(text: str) -> str:
    """``text`` with credentials replaced: the ledger applies this to every free text it
    writes. Idempotent: scrubbing twice changes nothing more."""
    return Redactor().text(text)


def scrub_bytes(data: bytes) -> bytes:
    """:func:`scrub` for bytes that are mostly text (a transcript); other bytes kept as is."""
    text = data.decode("utf-8", "surrogateescape")
    done = scrub(text)
    return data if done == text else done.encode("utf-8", "surrogateescape")


def redact_argv(argv: Iterable[str], environ: Mapping[str, str] | None = None,
                secrets: Mapping[str, str] | None = None) -> list[str]:
    """Each argument redacted (``--password=...``, ``-H 'Authorization: ...'``, tokens);
    ``secrets`` (value -> name) are redacted besides the secret-looking ``environ`` values."""
    redactor = Redactor({**secret_values(environ or {}), **(secrets or {})})
    result: list[str] = []
    for arg in argv:
        after_option = bool(result) and (_SECRET_OPTION.match(result[-1]) is not None
                                         or _SECRET_KEY_ARG.search(result[-1]) is not None)
        given = _OPTION_VALUE.match(arg)
        if after_option:
            result.append(MARK)
        elif given:
            result.append(given.group(1) + MARK)
        else:
            result.append(redactor.text(arg))
    return result
