"""The secrets corpus: FAKE credentials in realistic output lines, and ordinary lines that must
stay as they are (issue 12, item 7). Assembled for loopx.redaction.redact.

Every credential here is generated from a seeded RNG at import time, in the documented shape
of the real thing (prefix, alphabet, length).  None is a real credential, and no literal
secret-shaped string is stored in this file (so secret scanners / push protection stay quiet).

POSITIVES: list of Case(name, lines, secrets, keep)
    lines   -- the output lines (a multi-line case is fed line by line to one Redactor)
    secrets -- substrings that must not survive redaction (not even a 10-char piece of them)
    keep    -- substrings that must survive (key names, surrounding text)
NEGATIVES: list of (name, line) that must come out byte-for-byte unchanged.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
from dataclasses import dataclass, field

_rng = random.Random(20240611)

ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
LOWER_DIGITS = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"


def r(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(claims: dict) -> str:
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    payload = b64url(json.dumps(claims, separators=(",", ":")).encode())
    return f"{header}.{payload}.{b64url(_rng.randbytes(32))}"


def uuid4() -> str:
    h = r(HEX, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


def discord_token() -> str:
    user_id = str(_rng.randrange(10**17, 10**18) + 10**18)  # 19-digit snowflake, starts "1"
    return f"{b64url(user_id.encode())}.{r(B64URL, 6)}.{r(B64URL, 27)}"


@dataclass
class Case:
    name: str
    lines: list[str]
    secrets: list[str]
    keep: list[str] = field(default_factory=list)


def _case(name: str, line: str, secret: str, *keep: str) -> Case:
    assert secret in line, name
    return Case(name, [line], [secret], list(keep))


# ---------------------------------------------------------------- the fake credentials
S = {
    "ghp": "ghp_" + r(ALNUM, 36),
    "gho": "gho_" + r(ALNUM, 36),
    "ghs": "ghs_" + r(ALNUM, 36),
    "github_pat": "github_pat_11" + r(UPPER_DIGITS, 20) + "_" + r(ALNUM, 59),
    "glpat": "glpat-" + r(B64URL, 20),
    "xoxb": f"xoxb-{r(string.digits, 12)}-{r(string.digits, 13)}-{r(ALNUM, 24)}",
    "xoxp": f"xoxp-{r(string.digits, 11)}-{r(string.digits, 12)}-{r(string.digits, 13)}-{r(HEX, 32)}",
    "xapp": f"xapp-1-A{r(UPPER_DIGITS, 10)}-{r(string.digits, 13)}-{r(HEX, 64)}",
    "slack_hook": f"T{r(UPPER_DIGITS, 8)}/B{r(UPPER_DIGITS, 10)}/{r(ALNUM, 24)}",
    "akia": "AKIA" + r("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
    "asia": "ASIA" + r("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
    "aws_secret": r(B64, 40),
    "aws_secret2": r(B64, 40),
    "aws_session": "IQoJb3JpZ2luX2Vj" + r(B64, 300),
    "aiza": "AIza" + r(B64URL, 35),
    "aiza2": "AIza" + r(B64URL, 35),
    "gocspx": "GOCSPX-" + r(B64URL, 28),
    "jwt": jwt({"sub": "1234567890", "name": "Jane Doe", "iat": 1718000000}),
    "jwt2": jwt({"iss": "https://auth.example.com", "sub": "svc-ci", "exp": 1718003600}),
    "npm": "npm_" + r(ALNUM, 36),
    "npm2": "npm_" + r(ALNUM, 36),
    "pypi": "pypi-AgEIcHlwaS5vcmc" + r(B64URL, 150),
    "sendgrid": f"SG.{r(B64URL, 22)}.{r(B64URL, 43)}",
    "docker": "dckr_pat_" + r(B64URL, 27),
    "hvs": "hvs." + r(B64URL, 24),
    "hvs_long": "hvs.CAESI" + r(B64URL, 86),
    "vault_legacy": "s." + r(ALNUM, 24),
    "sq0atp": "sq0atp-" + r(B64URL, 22),
    "sq0csp": "sq0csp-" + r(B64URL, 43),
    "eaaa": "EAAA" + r(B64URL, 60),
    "sk_live": "sk_live_51" + r(ALNUM, 97),
    "rk_live": "rk_live_" + r(ALNUM, 24),
    "pk_live": "pk_live_" + r(ALNUM, 24),
    "sk_test": "sk_test_" + r(ALNUM, 24),
    "twilio_sk": "SK" + r(HEX, 32),
    "twilio_ac": "AC" + r(HEX, 32),
    "twilio_auth": r(HEX, 32),
    "mailchimp": r(HEX, 32) + "-us21",
    "azure": base64.b64encode(_rng.randbytes(64)).decode(),
    "heroku_uuid": uuid4(),
    "heroku_v2": "HRKU-AA" + r(B64URL, 58),
    "shpat": "shpat_" + r(HEX, 32),
    "discord": discord_token(),
    "telegram": f"{_rng.randrange(10**9, 7 * 10**9)}:AA{r(B64URL, 33)}",
    "openai_legacy": "sk-" + r(ALNUM, 20) + "T3BlbkFJ" + r(ALNUM, 20),
    "openai_proj": "sk-proj-" + r(B64URL, 74) + "T3BlbkFJ" + r(B64URL, 74),
    "anthropic": "sk-ant-api03-" + r(B64URL, 93) + "AA",
    "hf": "hf_" + r(string.ascii_letters, 34),
    "pg_pass": r(ALNUM, 18),
    "redis_pass": r(ALNUM, 24),
    "hunter": "hunter2!Summer",
    "api_key_rand": r(ALNUM, 32),
    "client_secret_rand": r(B64URL, 40),
    "db_password_rand": r(ALNUM + "!@#%^*", 20),
    "bearer_opaque": r(ALNUM + "-._~", 48),
    "basic_b64": base64.b64encode(b"deploy:" + r(ALNUM, 16).encode()).decode(),
    "x_api_key": r(HEX, 40),
    "session_cookie": r(B64URL, 43),
    "generic_hex_token": r(HEX, 64),
    "signing": r(B64, 44),
    "django_secret": r(ALNUM + "!@#$%^&*(-_=+)", 50),
    "pk_body": [r(B64, 64) for _ in range(4)],
    "ossh_body": [r(B64, 70) for _ in range(3)],
    "gcp_pk_body": r(B64, 120),
    "gcp_pk_id": r(HEX, 40),
    "k8s_tls_key": base64.b64encode(_rng.randbytes(60)).decode(),
}

# A .dockerconfigjson value: base64 of JSON whose "auth" is base64("user:password").
_docker_auth = base64.b64encode(b"ci-bot:" + S["docker"].encode()).decode()
S["dockerconfigjson"] = base64.b64encode(
    json.dumps({"auths": {"https://index.docker.io/v1/": {"auth": _docker_auth}}}).encode()
).decode()

POSITIVES: list[Case] = [
    # GitHub
    _case("github ghp in git log", f"remote: Invalid username or token. Using ghp token {S['ghp']} for push", S["ghp"]),
    _case("github gho in JSON", f'{{"access_token": "{S["gho"]}", "token_type": "bearer", "scope": "repo"}}', S["gho"], '"access_token": ', '"token_type": "bearer"'),
    _case("github ghs in clone URL", f"Cloning into 'app'... https://x-access-token:{S['ghs']}@github.com/acme/app.git", S["ghs"], "@github.com/acme/app.git"),
    _case("github fine-grained PAT env", f"GH_PAT={S['github_pat']}", S["github_pat"], "GH_PAT="),
    # GitLab
    _case("gitlab glpat export", f"+ export GITLAB_TOKEN={S['glpat']}", S["glpat"], "GITLAB_TOKEN="),
    # Slack
    _case("slack bot env", f"SLACK_BOT_TOKEN={S['xoxb']}", S["xoxb"], "SLACK_BOT_TOKEN="),
    _case("slack user token in log", f"2024-06-11 10:02:03 INFO slack_sdk: auth.test ok token={S['xoxp']} team=T024BE7LD", S["xoxp"], "team=T024BE7LD"),
    _case("slack app token", f"socket-mode: connecting with app token {S['xapp']}", S["xapp"], "socket-mode: connecting"),
    _case("slack webhook", f"POST https://hooks.slack.com/services/{S['slack_hook']} -> 200", S["slack_hook"], "-> 200"),
    # AWS
    _case("aws access key id ini", f"aws_access_key_id = {S['akia']}", S["akia"], "aws_access_key_id = "),
    _case("aws secret env dump", f"AWS_SECRET_ACCESS_KEY={S['aws_secret']}", S["aws_secret"], "AWS_SECRET_ACCESS_KEY="),
    _case("aws secret ini", f"aws_secret_access_key = {S['aws_secret2']}", S["aws_secret2"], "aws_secret_access_key = "),
    Case("aws sts json", [f'    "AccessKeyId": "{S["asia"]}",', f'    "SessionToken": "{S["aws_session"]}",'],
         [S["asia"], S["aws_session"]], ['"AccessKeyId": ', '"SessionToken": ']),
    # Google
    _case("google api key in URL", f"GET https://maps.googleapis.com/maps/api/geocode/json?address=Berlin&key={S['aiza']} 200 OK", S["aiza"], "address=Berlin", "200 OK"),
    _case("google api key firebase config", f'  apiKey: "{S["aiza2"]}",', S["aiza2"], "apiKey: "),
    _case("google oauth client secret", f'{{"installed":{{"client_id":"1234-abc.apps.googleusercontent.com","client_secret":"{S["gocspx"]}"}}}}', S["gocspx"], "apps.googleusercontent.com", '"client_secret":'),
    # JWT
    _case("jwt in cookie log", f"DEBUG set-cookie: session={S['jwt']}; Path=/; HttpOnly", S["jwt"], "Path=/; HttpOnly"),
    _case("jwt in bearer header", f"> Authorization: Bearer {S['jwt2']}", S["jwt2"], "Authorization: Bearer "),
    # npm
    _case("npmrc authToken", f"//registry.npmjs.org/:_authToken={S['npm']}", S["npm"], "//registry.npmjs.org/:_authToken="),
    _case("npm token bare in log", f"npm notice Publishing with token {S['npm2']} to https://registry.npmjs.org/", S["npm2"], "to https://registry.npmjs.org/"),
    # PyPI
    _case("pypi twine env", f"TWINE_PASSWORD={S['pypi']}", S["pypi"], "TWINE_PASSWORD="),
    # SendGrid
    _case("sendgrid in log", f"[mailer] using SendGrid key {S['sendgrid']} (from settings)", S["sendgrid"], "(from settings)"),
    # Docker
    _case("docker hub PAT login", f"$ echo {S['docker']} | docker login -u ci-bot --password-stdin", S["docker"], "docker login -u ci-bot"),
    _case("dockerconfigjson secret", f"  .dockerconfigjson: {S['dockerconfigjson']}", S["dockerconfigjson"], ".dockerconfigjson: "),
    # Vault
    _case("vault hvs env", f"VAULT_TOKEN={S['hvs']}", S["hvs"], "VAULT_TOKEN="),
    _case("vault hvs long in output", f"token                  {S['hvs_long']}", S["hvs_long"], "token "),
    _case("vault legacy s. header", f"curl -H 'X-Vault-Token: {S['vault_legacy']}' https://vault:8200/v1/secret/data/app", S["vault_legacy"], "X-Vault-Token: "),
    # Square
    _case("square sq0atp", f'square.Client(access_token="{S["sq0atp"]}", environment="production")', S["sq0atp"], 'environment="production"'),
    _case("square sq0csp", f"SQUARE_APP_SECRET={S['sq0csp']}", S["sq0csp"], "SQUARE_APP_SECRET="),
    _case("square EAAA in log", f"INFO payments: square token {S['eaaa']} loaded", S["eaaa"], "loaded"),
    # Stripe
    _case("stripe sk_live long", f"stripe.api_key = '{S['sk_live']}'", S["sk_live"], "stripe.api_key = "),
    _case("stripe rk_live", f"export STRIPE_RESTRICTED={S['rk_live']}", S["rk_live"], "STRIPE_RESTRICTED="),
    _case("stripe pk_live (public)", f'<script>Stripe("{S["pk_live"]}")</script>', S["pk_live"], "<script>Stripe("),
    _case("stripe sk_test", f"E   stripe.error.AuthenticationError: Invalid API Key provided: {S['sk_test']}", S["sk_test"], "Invalid API Key provided: "),
    # Twilio
    _case("twilio api key SK", f"TWILIO_API_KEY={S['twilio_sk']}", S["twilio_sk"], "TWILIO_API_KEY="),
    _case("twilio account SID in URL", f"POST https://api.twilio.com/2010-04-01/Accounts/{S['twilio_ac']}/Messages.json 201", S["twilio_ac"], "/Messages.json 201"),
    _case("twilio auth token env", f"TWILIO_AUTH_TOKEN={S['twilio_auth']}", S["twilio_auth"], "TWILIO_AUTH_TOKEN="),
    # Mailchimp
    _case("mailchimp key", f"mailchimp: client configured api_key {S['mailchimp']}", S["mailchimp"], "mailchimp: client configured"),
    # Azure
    _case("azure storage connection string", f"AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=acmeprod;AccountKey={S['azure']};EndpointSuffix=core.windows.net", S["azure"], "AccountName=acmeprod", "EndpointSuffix=core.windows.net"),
    # Heroku
    _case("heroku api key (uuid) env", f"HEROKU_API_KEY={S['heroku_uuid']}", S["heroku_uuid"], "HEROKU_API_KEY="),
    _case("heroku v2 token", f"heroku: authorized with {S['heroku_v2']}", S["heroku_v2"], "heroku: authorized with"),
    # Shopify
    _case("shopify admin token header", f"X-Shopify-Access-Token: {S['shpat']}", S["shpat"], "X-Shopify-Access-Token: "),
    # Discord / Telegram
    _case("discord bot token", f"discord.errors.LoginFailure: Improper token has been passed: {S['discord']}", S["discord"], "Improper token has been passed"),
    _case("telegram bot URL", f"GET https://api.telegram.org/bot{S['telegram']}/getMe 401 Unauthorized", S["telegram"], "/getMe 401"),
    # OpenAI / Anthropic / Hugging Face
    _case("openai legacy key", f"openai.AuthenticationError: Incorrect API key provided: {S['openai_legacy']}.", S["openai_legacy"], "Incorrect API key provided"),
    _case("openai project key env", f"OPENAI_API_KEY={S['openai_proj']}", S["openai_proj"], "OPENAI_API_KEY="),
    _case("anthropic key header", f'-H "x-api-key: {S["anthropic"]}" -H "anthropic-version: 2023-06-01"', S["anthropic"], "anthropic-version: 2023-06-01"),
    _case("huggingface token", f"Token is valid (permission: write). Your token {S['hf']} has been saved", S["hf"], "has been saved"),
    # Private keys
    Case("RSA private key block", ["-----BEGIN RSA PRIVATE KEY-----", *S["pk_body"], "-----END RSA PRIVATE KEY-----"],
         S["pk_body"], ["BEGIN RSA PRIVATE KEY", "END RSA PRIVATE KEY"]),
    Case("OpenSSH key block in cat output", ["$ cat ~/.ssh/id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----", *S["ossh_body"], "-----END OPENSSH PRIVATE KEY-----", "$ ls"],
         S["ossh_body"], ["$ cat ~/.ssh/id_ed25519", "$ ls"]),
    Case("GCP service account JSON (one-line key + id)",
         [f'  "private_key_id": "{S["gcp_pk_id"]}",',
          f'  "private_key": "-----BEGIN PRIVATE KEY-----\\n{S["gcp_pk_body"]}\\n-----END PRIVATE KEY-----\\n",',
          '  "client_email": "ci@acme-prod.iam.gserviceaccount.com",'],
         [S["gcp_pk_body"]], ['"private_key_id": ', "ci@acme-prod.iam.gserviceaccount.com"]),
    # Basic auth URLs
    _case("postgres URL password", f"DATABASE_URL=postgres://app:{S['pg_pass']}@db.internal:5432/app", S["pg_pass"], "postgres://app:", "@db.internal:5432/app"),
    _case("redis URL empty user", f"Connecting to redis://:{S['redis_pass']}@cache:6379/0", S["redis_pass"], "@cache:6379/0"),
    # Keyword assignments
    _case("password= low entropy", f"mysql: connecting with user=app password={S['hunter']} host=db", S["hunter"], "password=", "host=db"),
    _case("api_key JSON random", f'{{"service": "geo", "api_key": "{S["api_key_rand"]}", "timeout": 30}}', S["api_key_rand"], '"api_key": ', '"timeout": 30'),
    _case("client_secret python", f"    client_secret = '{S['client_secret_rand']}'", S["client_secret_rand"], "client_secret = "),
    _case("db_password yaml", f"  db_password: {S['db_password_rand']}", S["db_password_rand"], "db_password: "),
    _case("django SECRET_KEY", f"SECRET_KEY = \"{S['django_secret']}\"", S["django_secret"], "SECRET_KEY = "),
    _case("generic hex token env", f"INTERNAL_SERVICE_TOKEN={S['generic_hex_token']}", S["generic_hex_token"], "INTERNAL_SERVICE_TOKEN="),
    _case("k8s secret tls.key", f"  tls.key: {S['k8s_tls_key']}", S["k8s_tls_key"], "tls.key: "),
    _case("neutral key, high-entropy value", f'  "signature": "{S["signing"]}",', S["signing"], '"signature": '),
    # Headers
    _case("bearer opaque token", f"curl -sS -H 'Authorization: Bearer {S['bearer_opaque']}' https://api.example.com/v1/me", S["bearer_opaque"], "Authorization: Bearer ", "https://api.example.com/v1/me"),
    _case("basic auth header", f"< Authorization: Basic {S['basic_b64']}", S["basic_b64"], "Authorization: Basic "),
    _case("x-api-key header", f"X-Api-Key: {S['x_api_key']}", S["x_api_key"], "X-Api-Key: "),
    _case("cookie header", f"Cookie: csrftoken=abc; sessionid={S['session_cookie']}", S["session_cookie"], "Cookie: "),
]

NEGATIVES: list[tuple[str, str]] = [
    ("git commit line", "commit 3f2a9c1e5b7d4a6f8e0c2b4d6f8a0c2e4b6d8f0a"),
    ("git commit line 2", "commit 9b1e7c4d2a0f8e6c4b2a0d8f6e4c2a0b8d6f4e2c (HEAD -> main, origin/main)"),
    ("git merge line", "Merge: a1b2c3d e4f5a6b"),
    ("git reset", "HEAD is now at 3f2a9c1 Fix token refresh in password reset flow"),
    ("git commit summary", "[main 7c9e2f1] add password reset form and api_key rotation"),
    ("git rev-parse", "rev-parse HEAD: 8d4c2b0a6e1f3d5b7a9c0e2f4a6b8d0c1e3f5a7b"),
    ("uuid request id", "INFO request_id=6f1c2b4e-8d3a-4e5f-9a7b-1c2d3e4f5a6b status=200 duration_ms=12"),
    ("uuid in JSON", '{"id": "0b7e5a2c-3f1d-4c8e-9b6a-2d4f6e8a0c1b", "name": "build-42"}'),
    ("pytest pass", "tests/test_auth.py::test_token_expiry PASSED                              [ 12%]"),
    ("pytest fail summary", "FAILED tests/test_redact.py::test_password_assignment - AssertionError: assert 'password=[REDACTED]' == 'password=x'"),
    ("pytest totals", "========================= 42 passed, 3 skipped in 1.23s ========================="),
    ("pytest traceback path", "src/loopx/features/redact.py:42: in line"),
    ("file path with hash dirs", "Stored in directory: /home/dev/.cache/pip/wheels/6f/1c/2b4e8d9a0c3f5e7b1d2a4c6e8f0b3d5a7c9e1f2a4b6c8d0e2f4a6b8c0d2e"),
    ("node path", "    at Object.<anonymous> (/app/node_modules/@acme/secret-manager/dist/index.js:17:23)"),
    ("base64 of words", "data: SGVsbG8sIHdvcmxkISBUaGlzIGlzIGEgdGVzdCBvZiB0aGUgYmFzZTY0IGVuY29kZXIu"),
    ("base64 of words JSON", '{"message": "VGhlIHF1aWNrIGJyb3duIGZveCBqdW1wcyBvdmVyIHRoZSBsYXp5IGRvZw=="}'),
    ("pip versions", "Successfully installed detect-secrets-1.5.0 requests-2.32.3 urllib3-2.2.1 PyYAML-6.0.1"),
    ("python banner", "Python 3.11.7 (main, Dec  8 2023, 18:56:57) [GCC 12.2.0] on linux"),
    ("semver assignment", 'version = "1.2.3-rc.1+build.20240101"'),
    ("ulid fixed", "job_id=01JD5Z3Q1T8E0000000000ABCD state=queued"),
    ("ulid random", "run 01HZX4K7Q9M2V8T3R6P0W5N1BC finished in 3.2s"),
    ("docker digest", f"Digest: sha256:{hashlib.sha256(b'app:1.4').hexdigest()}"),
    ("image ref digest", "Pulling ghcr.io/acme/app@sha256:0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"),
    ("npm integrity", f'      "integrity": "sha512-{base64.b64encode(hashlib.sha512(b"left-pad-1.3.0").digest()).decode()}",'),
    ("pip hash", "    --hash=sha256:d1d68a2f6c6a1e1d9b4c9e0c8f7a6b5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9a \\"),
    ("masked password", "password: ********"),
    ("templated api key", "api_key: ${API_KEY}"),
    ("indirect token", 'token = os.environ["GITHUB_TOKEN"]'),
    ("password file env", "POSTGRES_PASSWORD_FILE=/run/secrets/db_password"),
    ("PWD env", "PWD=/work/main/loopx"),
    ("OLDPWD env", "OLDPWD=/home/dev"),
    ("token type", '{"token_type": "bearer", "expires_in": 3600}'),
    ("public IP", "Connecting to 93.184.216.34:443 ... connected."),
    ("apache-style class", "INFO  APEngineController started on port 8080"),
    ("hex color and numbers", "  color: #1a2b3c; width: 1280px; z-index: 9999"),
    ("long identifier", "ERROR in NotificationDispatcherService: retry budget exhausted after 5 attempts"),
    ("url without credentials", "Downloading https://files.pythonhosted.org/packages/3f/2a/abc/requests-2.32.3-py3-none-any.whl (64 kB)"),
    ("email", "Author: Jane Doe <jane.doe@example.com>"),
    ("timestamp", "2024-06-11T10:02:03.123456Z INFO worker started pid=4242"),
    ("already redacted", "Authorization: Bearer [REDACTED]"),
]


# ------------------------------------------------------------------ second round (held out)
# Written after the first tuning pass.
S2 = {
    "aws_session": r(B64, 220),
    "refresh": r(B64URL, 64),
    "mongo_pw": r(ALNUM, 16),
    "mysql_pw": "S3cr3t-Passw0rd",
    "pgpass": r(ALNUM + "!%^*", 14),
    "license": "-".join(r(UPPER_DIGITS, 5) for _ in range(5)),
    "client_key": r(B64, 32),
    "app_key": "base64:" + base64.b64encode(_rng.randbytes(32)).decode(),
    "docker_auth": base64.b64encode(b"ci:" + r(ALNUM, 20).encode()).decode(),
    "query_key": r(ALNUM, 24),
    "horse": "correct horse battery staple",
    "db_pass": r(ALNUM, 12),
    "azure_ad": r(ALNUM, 3) + "8Q~" + r(ALNUM + "~._-", 34),
    "dd": r(HEX, 32),
    "sentry": r(HEX, 32),
    "curl_u": r(ALNUM, 14),
    "tg_env": f"{_rng.randrange(10**9, 7 * 10**9)}:AA{r(B64URL, 33)}",
    "gl_url": "glpat-" + r(B64URL, 20),
    "yaml_pk": [r(B64, 64) for _ in range(2)],
}

POSITIVES_2: list[Case] = [
    _case("aws session token export", f"export AWS_SESSION_TOKEN={S2['aws_session']}", S2["aws_session"], "AWS_SESSION_TOKEN="),
    _case("oauth refresh token JSON", f'{{"access_token": "[REDACTED]", "refresh_token": "{S2["refresh"]}", "expires_in": 3599}}', S2["refresh"], '"expires_in": 3599'),
    _case("mongodb+srv URL", f"MongoServerError: bad auth for mongodb+srv://admin:{S2['mongo_pw']}@cluster0.ab1cd.mongodb.net/prod", S2["mongo_pw"], "@cluster0.ab1cd.mongodb.net/prod"),
    _case("mysqldump --password=", f"+ mysqldump --user=root --password={S2['mysql_pw']} shop", S2["mysql_pw"], "--user=root", " shop"),
    _case("PGPASSWORD prefix", f"+ PGPASSWORD={S2['pgpass']} psql -h db -U app", S2["pgpass"], "psql -h db -U app"),
    _case("license key env", f"LICENSE_KEY={S2['license']}", S2["license"], "LICENSE_KEY="),
    _case("client_key yaml", f"  client_key: {S2['client_key']}", S2["client_key"], "client_key: "),
    _case("laravel APP_KEY base64:", f"APP_KEY={S2['app_key']}", S2["app_key"], "APP_KEY="),
    _case("docker config.json auth", f'    "https://index.docker.io/v1/": {{"auth": "{S2["docker_auth"]}"}}', S2["docker_auth"], '"auth": '),
    _case("api_key in query string", f"GET https://api.example.com/v1/data?api_key={S2['query_key']}&format=json 200", S2["query_key"], "&format=json 200"),
    _case("passphrase with spaces", f'  "password": "{S2["horse"]}",', S2["horse"], '"password": '),
    _case("DB_PASS env", f"DB_PASS={S2['db_pass']}", S2["db_pass"], "DB_PASS="),
    _case("Azure AD client secret", f"AZURE_CLIENT_SECRET={S2['azure_ad']}", S2["azure_ad"], "AZURE_CLIENT_SECRET="),
    _case("Datadog API key", f"DD_API_KEY={S2['dd']}", S2["dd"], "DD_API_KEY="),
    _case("Sentry DSN", f"sentry_dsn: https://{S2['sentry']}@o450000.ingest.sentry.io/5500000", S2["sentry"], "sentry_dsn: "),
    _case("curl -u user:pass", f"+ curl -fsS -u admin:{S2['curl_u']} https://ci.example.com/api/json", S2["curl_u"], "https://ci.example.com/api/json"),
    _case("telegram token env", f"TELEGRAM_BOT_TOKEN={S2['tg_env']}", S2["tg_env"], "TELEGRAM_BOT_TOKEN="),
    _case("gitlab token in clone URL", f"git clone https://oauth2:{S2['gl_url']}@gitlab.com/acme/infra.git", S2["gl_url"], "@gitlab.com/acme/infra.git"),
    Case("YAML block private key", ["  private_key: |", "    -----BEGIN EC PRIVATE KEY-----", *("    " + x for x in S2["yaml_pk"]), "    -----END EC PRIVATE KEY-----", "  region: eu-west-1"],
         S2["yaml_pk"], ["region: eu-west-1"]),
]

NEGATIVES_2: list[tuple[str, str]] = [
    ("assertion message", "E       AssertionError: expected 'abc' to equal 'abd'"),
    ("coverage header", "coverage: platform linux, python 3.11.7-final-0"),
    ("coverage row", "loopx/redaction/redact.py        62      0   100%"),
    ("git CRLF warning", "warning: LF will be replaced by CRLF in src/auth/token_store.py."),
    ("npm deprecated", "npm WARN deprecated inflight@1.0.6: This module is not supported, and leaks memory."),
    ("npm audit", "added 1287 packages, and audited 1288 packages in 14s"),
    ("docker step", "Step 4/12 : RUN pip install -r requirements.txt"),
    ("docker layer", " ---> 3f2a9c1e5b7d"),
    ("sha1sum", "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12  dist/loopx-0.3.0.tar.gz"),
    ("maven download", "[INFO] Downloaded from central: https://repo.maven.apache.org/maven2/org/apache/commons/commons-lang3/3.14.0/commons-lang3-3.14.0.jar (658 kB at 4.1 MB/s)"),
    ("go.sum line", "github.com/stretchr/testify v1.9.0 h1:HtqpIVDClZ4nwg75+xj+v6A/QvWkqQE5BJ0lmEjxHQ0="),
    ("actions cache key", "Cache restored from key: Linux-pip-4f1c2b8e9d0a3c5e7f9b1d3a5c7e9f0b2d4a6c8e"),
    ("cache-key yaml", "  cache-key: node-modules-a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6"),
    ("auth required", "  auth: required"),
    ("max_tokens", '{"model": "gpt-4o", "max_tokens": 4096, "temperature": 0.2}'),
    ("reset url", "password_reset_url=https://example.com/account/reset"),
    ("secret name", "secret_name: prod/db/credentials"),
    ("ssh public key", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGn2c7XcBq3Kp1vQw8m0fJx4Yt6Rz2Lh9Ns5Ud7Ea1Bo dev@laptop"),
    ("publicKey JSON", '"publicKey": "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEu3fMbVJ5h1n0e9D2yq7XWb4Kc8Lr6Tg0Pa2Hs5Nv1Qm3Zx7Jd9Fk4Yw6Rt8Ei2Uo0Sb5Gc1Lp7Nq3Vh9Aj=="'),
    ("known hosts", "Warning: Permanently added 'github.com' (ED25519) to the list of known hosts."),
    ("git push range", "   3f2a9c1..7c9e2f1  main -> main"),
    ("oauth nonce hex", "nonce=8f14e45fceea167a5a36dedd4bea2543"),
    ("request id ulid header", "X-Request-Id: 01HZX4K7Q9M2V8T3R6P0W5N1BC"),
    ("traceparent", "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
    ("k8s uid", "  uid: 6f1c2b4e-8d3a-4e5f-9a7b-1c2d3e4f5a6b"),
    ("data URI", '<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==">'),
    ("token usage", "usage: prompt_tokens=1532 completion_tokens=211 total_tokens=1743"),
    ("pytest param id", "tests/test_redact.py::test_shapes[github_pat-token] PASSED"),
    ("mypy", "loopx/redaction/redact.py:87: error: Argument 1 to \"sub\" has incompatible type"),
    ("session log", "session 7 started at 2024-06-11 10:02:03 (model=claude-sonnet)"),
]


# ------------------------------------------------------------------ third round (held out)
# Session-transcript / code-review style lines (agent transcripts contain code and diffs).
S3 = {
    "py_pw": r(ALNUM, 12) + "!",
    "gh_actions": r(ALNUM, 40),
    "kv_token": r(B64URL, 32),
    "ts_key": r(ALNUM, 32),
    "yaml_secret": r(B64, 28),
}
POSITIVES_3: list[Case] = [
    _case("diff adds hard-coded password", f'+    conn = connect(host="db", password="{S3["py_pw"]}")', S3["py_pw"], '+    conn = connect(host="db", password='),
    _case("actions env echo", f"  GITHUB_TOKEN: {S3['gh_actions']}", S3["gh_actions"], "GITHUB_TOKEN: "),
    _case("markdown code span", f"Set `NOTION_TOKEN={S3['kv_token']}` and rerun.", S3["kv_token"], "and rerun."),
    _case("typescript const", f"const apiKey = '{S3['ts_key']}';", S3["ts_key"], "const apiKey = "),
    _case("helm values secret", f"    webhookSecret: {S3['yaml_secret']}", S3["yaml_secret"], "webhookSecret: "),
]
NEGATIVES_3: list[tuple[str, str]] = [
    ("kwarg passthrough", "        return Client(api_key=api_key, password=password, timeout=timeout)"),
    ("attribute assignment", "        self.password = password"),
    ("settings reference", "    api_key=settings.api_key,"),
    ("env get", '+    token = os.environ.get("GITHUB_TOKEN")'),
    ("comparison of variables", "    if password == confirm_password:"),
    ("camelCase reference", "  const token = await getToken(); this.secret = config.secretValue;"),
    ("docs placeholder", "Set `API_KEY=your-api-key-here` in `.env` before running."),
    ("markdown table", "| api_key | string | The API key used to authenticate |"),
    ("function signature", "def redact(text: str, environ: Mapping[str, str] | None = None) -> str:"),
    ("type annotation", "    password: str | None = None"),
    ("diff header", "diff --git a/loopx/features/redact.py b/loopx/features/redact.py"),
    ("diff index", "index 3f2a9c1..7c9e2f1 100644"),
    ("hunk header", "@@ -30,12 +30,18 @@ _SHAPES = ["),
    ("regex in code", '    r"\\bsk-[A-Za-z0-9_-]{20,}",'),
    ("test name with token", "    def test_bearer_token_is_redacted(self):"),
]


# ---------------------------------------------------------------- issue 22: shapes by class
# Each shape is named after the rule of the gitleaks default config (loopx/data/gitleaks.json)
# whose pattern it is written from, or "loopx:<class>" for the classes loopx adds (flags,
# query strings, base64 `user:pass`, netrc, labels, vendor prefixes gitleaks lacks).
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def _uuid_lower() -> str:
    h = r(LOWER_DIGITS, 32)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _shapes() -> list[tuple[str, str]]:
    """(rule, secret) pairs: two of each shape."""
    makers = {
        "age-secret-key": lambda: "AGE-SECRET-KEY-1" + r(BECH32, 58),
        "digitalocean-pat": lambda: "dop_v1_" + r(HEX, 64),
        "digitalocean-access-token": lambda: "doo_v1_" + r(HEX, 64),
        "digitalocean-refresh-token": lambda: "dor_v1_" + r(HEX, 64),
        "heroku-api-key-v2": lambda: "HRKU-AA" + r(B64URL, 58),
        "npm-access-token": lambda: "npm_" + r(LOWER_DIGITS, 36),
        "pypi-upload-token": lambda: "pypi-AgEIcHlwaS5vcmc" + r(B64URL, 70),
        "rubygems-api-token": lambda: "rubygems_" + r(HEX, 48),
        "clojars-api-token": lambda: "CLOJARS_" + r(LOWER_DIGITS, 60),
        "grafana-cloud-api-token": lambda: "glc_" + r(ALNUM, 40),
        "grafana-service-account-token": lambda: "glsa_" + r(ALNUM, 32) + "_" + r(HEX, 8),
        "grafana-api-key": lambda: "eyJrIjoi" + r(ALNUM, 72),
        "sentry-user-token": lambda: "sntryu_" + r(HEX, 64),
        "slack-webhook-url": lambda: (f"https://hooks.slack.com/services/T{r(UPPER_DIGITS, 8)}/"
                                      f"B{r(UPPER_DIGITS, 10)}/{r(ALNUM, 24)}"),
        "microsoft-teams-webhook": lambda: (
            f"https://acme.webhook.office.com/webhookb2/{_uuid_lower()}@{_uuid_lower()}"
            f"/IncomingWebhook/{r(LOWER_DIGITS, 32)}/{_uuid_lower()}"),
        "1password-secret-key": lambda: (f"A3-{r(UPPER_DIGITS, 6)}-{r(UPPER_DIGITS, 11)}-"
                                         f"{r(UPPER_DIGITS, 5)}-{r(UPPER_DIGITS, 5)}-{r(UPPER_DIGITS, 5)}"),
        "adobe-client-secret": lambda: "p8e-" + r(LOWER_DIGITS, 32),
        "alibaba-access-key-id": lambda: "LTAI" + r(LOWER_DIGITS, 20),
        "anthropic-admin-api-key": lambda: "sk-ant-admin01-" + r(B64URL, 93) + "AA",
        "artifactory-api-key": lambda: "AKCp" + r(ALNUM, 69),
        "atlassian-api-token": lambda: "ATATT3" + r(B64URL, 186),
        "databricks-api-token": lambda: "dapi" + r(HEX, 32),
        "doppler-api-token": lambda: "dp.pt." + r(LOWER_DIGITS, 43),
        "duffel-api-token": lambda: "duffel_test_" + r(LOWER_DIGITS, 43),
        "dynatrace-api-token": lambda: f"dt0c01.{r(UPPER_DIGITS, 24)}.{r(UPPER_DIGITS, 64)}",
        "easypost-api-token": lambda: "EZAK" + r(LOWER_DIGITS, 54),
        "flutterwave-secret-key": lambda: "FLWSECK_TEST-" + r("abcdefgh0123456789", 32) + "-X",
        "frameio-api-token": lambda: "fio-u-" + r(LOWER_DIGITS, 64),
        "gitlab-runner-authentication-token": lambda: "glrt-" + r(ALNUM, 20),
        "gitlab-deploy-token": lambda: "gldt-" + r(ALNUM, 20),
        "github-refresh-token": lambda: "ghr_" + r(ALNUM, 36),
        "hashicorp-tf-api-token": lambda: f"{r(LOWER_DIGITS, 14)}.atlasv1.{r(LOWER_DIGITS, 64)}",
        "linear-api-key": lambda: "lin_api_" + r(ALNUM, 40),
        "postman-api-token": lambda: f"PMAK-{r(HEX, 24)}-{r(HEX, 34)}",
        "prefect-api-token": lambda: "pnu_" + r(ALNUM, 36),
        "pulumi-api-token": lambda: "pul-" + r(HEX, 40),
        "readme-api-token": lambda: "rdme_" + r(LOWER_DIGITS, 70),
        "sendinblue-api-token": lambda: f"xkeysib-{r(HEX, 64)}-{r(LOWER_DIGITS, 16)}",
        "shippo-api-token": lambda: "shippo_live_" + r(HEX, 40),
        "planetscale-password": lambda: "pscale_pw_" + r(ALNUM, 43),
        "scalingo-api-token": lambda: "tk-us-" + r(B64URL, 48),
        "flyio-access-token": lambda: "fo1_" + r(B64URL, 43),
        "infracost-api-token": lambda: "ico-" + r(ALNUM, 32),
        "harness-api-key": lambda: f"pat.{r(B64URL, 22)}.{r(ALNUM, 24)}.{r(ALNUM, 20)}",
        "cloudflare-origin-ca-key": lambda: f"v1.0-{r(HEX, 24)}-{r(HEX, 146)}",
        "octopus-deploy-api-key": lambda: "API-" + r(UPPER_DIGITS, 26),
        "perplexity-api-key": lambda: "pplx-" + r(ALNUM, 48),
        "notion-api-token": lambda: "ntn_" + r(string.digits, 11) + r(ALNUM, 35),
        "loopx:stripe-webhook-secret": lambda: "whsec_" + r(ALNUM, 32),
        "loopx:new-relic-user-key": lambda: "NRAK-" + r(UPPER_DIGITS, 27),
        "loopx:nuget-api-key": lambda: "oy2" + r(LOWER_DIGITS, 43),
        "loopx:discord-webhook": lambda: (f"https://discord.com/api/webhooks/{r(string.digits, 18)}/"
                                          f"{r(B64URL, 68)}"),
        "loopx:sentry-dsn": lambda: (f"https://{r(HEX, 32)}@o{r(string.digits, 6)}.ingest.sentry.io/"
                                     f"{r(string.digits, 7)}"),
    }
    return [(rule, make()) for rule, make in makers.items() for _ in range(2)]


SHAPES_4 = _shapes()

# Where a bare vendor token turns up: plain output, a label before KEY=value, an error
# message, a flag, JSON, a shell export, a YAML line, a quoted argument.
_TEMPLATES_4 = [
    "deploy step 3 used {s} and finished",
    "env: API_TOKEN={s}",
    "Error: token={s} rejected by upstream",
    "+ ./release.sh --token {s} --dry-run",
    '{{"level":"info","msg":"configured","credential":"{s}"}}',
    "export SERVICE_CREDENTIAL={s}",
    "  webhook: {s}",
    "curl -sS -X POST '{s}' -d @payload.json",
]


def _class_cases() -> list[Case]:
    """The classes of issue 22 that have no vendor prefix: labels, flags, query strings,
    base64 `user:pass`, netrc lines, database clients."""
    pw = [r(ALNUM, 12) + "!" for _ in range(12)]
    sig = [r(B64URL, 43) for _ in range(4)]
    basic = [base64.b64encode(f"deploy:{p}".encode()).decode() for p in pw[:3]]
    cases = [
        _case("label env password", f"env: DB_PASSWORD={pw[0]}", pw[0], "DB_PASSWORD="),
        _case("label error password", f"Error: password={pw[1]} rejected", pw[1], "rejected"),
        _case("flag --password", f"$ tool login --password {pw[2]} --user ci", pw[2], "--user ci"),
        _case("flag --db-password=", f"psql --db-password={pw[3]} -h db", pw[3], "-h db"),
        _case("flag mysql -p", f"mysql -u root -p{pw[4]} app < dump.sql", pw[4], "dump.sql"),
        _case("flag sshpass -p", f"sshpass -p {pw[5]} ssh deploy@host", pw[5], "deploy@host"),
        _case("flag redis-cli -a", f"redis-cli -h cache -a {pw[6]} ping", pw[6], "ping"),
        _case("query sig", f"GET https://acct.blob.core.windows.net/c/f.tar?sv=2022-11-02&sig={sig[0]}",
              sig[0], "sv=2022-11-02"),
        _case("query X-Amz-Signature",
              f"https://b.s3.amazonaws.com/k?X-Amz-Expires=300&X-Amz-Signature={r(HEX, 64)}",
              "", "X-Amz-Expires=300"),
        _case("query access_token", f"redirect to /cb?state=xyz&access_token={sig[1]}", sig[1], "state=xyz"),
        _case("query token", f"wget https://dl.example.com/a.zip?token={sig[2]}", sig[2], "a.zip"),
        _case("basic header", f"-H 'Authorization: Basic {basic[0]}'", basic[0], "Authorization"),
        _case("basic bare word", f"proxy creds Basic {basic[1]} sent", basic[1], "sent"),
        _case("base64 user:pass bare", f"AUTH_B64 {basic[2]}", basic[2], "AUTH_B64"),
        _case("netrc one line", f"machine api.example.com login ci password {pw[7]}", pw[7],
              "login ci"),
        _case("netrc default", f"default login anonymous password {pw[8]}", pw[8], "anonymous"),
        Case("netrc lines", ["machine git.example.com", "  login ci-bot", f"  password {pw[9]}"],
             [pw[9]], ["ci-bot"]),
        _case("label yaml password", f"- name: connect  # args: password={pw[10]}", pw[10], "connect"),
        _case("label json in log", f'2024-06-01 ERROR auth: {{"password": "{pw[11]}"}}', pw[11],
              "ERROR"),
    ]
    amz = cases[8]
    amz.secrets = [amz.lines[0].split("Signature=")[1]]
    return cases


def _vendor_cases() -> list[Case]:
    cases = []
    for i, (rule, secret) in enumerate(SHAPES_4):
        template = _TEMPLATES_4[i % len(_TEMPLATES_4)]
        if secret.startswith("https://") and "{s} " in template and "curl" not in template:
            template = "notify {s} on failure"
        line = template.format(s=secret)
        if "discord.com" in secret:
            secret = secret.rsplit("/", 1)[1]  # the URL is kept, its token redacted
        elif "/webhookb2/" in secret or "/services/" in secret:
            secret = secret.split("/webhookb2/" if "webhookb2" in secret else "/services/")[1]
        elif "sentry.io" in secret:
            secret = secret.split("//", 1)[1].split("@", 1)[0]
        cases.append(_case(f"{rule} #{i % 2 + 1}", line, secret))
    return cases


POSITIVES_4: list[Case] = _vendor_cases() + _class_cases()
SECRETS_4 = [s for c in POSITIVES_4 for s in c.secrets]

# 50 ordinary lines of the kinds a run's output, a commit message and a note carry: none
# may change (issue 22 allows at most one false positive; the test asserts the count).
_b64_png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + _rng.randbytes(90)).decode()
NEGATIVES_4: list[tuple[str, str]] = [
    ("commit id", f"commit {hashlib.sha1(b'a').hexdigest()}"),
    ("commit line", f"[main {r(HEX, 7)}] fix the drain race (#42)"),
    ("merge", f"Merge: {r(HEX, 7)} {r(HEX, 7)}"),
    ("rev-parse", f"HEAD is now at {r(HEX, 40)}"),
    ("ulid", "event 01J0ZK3M8Q4N6R2T5V7W9X1Y3A written"),
    ("ulid list", "ids: 01HZX4J9YB7Q2M6N8P0R3S5T7V, 01HZX4J9YB7Q2M6N8P0R3S5T7W"),
    ("uuid", f"request-id: {uuid4()}"),
    ("uuid upper", f"trace {uuid4().upper()} done"),
    ("sha256 file", f"{hashlib.sha256(b'x').hexdigest()}  dist/loopx-0.1.0.tar.gz"),
    ("sha256 digest", f"digest: sha256:{hashlib.sha256(b'y').hexdigest()}"),
    ("sha512 integrity", f'"integrity": "sha512-{base64.b64encode(hashlib.sha512(b"z").digest()).decode()}"'),
    ("docker image", f"image@sha256:{hashlib.sha256(b'img').hexdigest()}"),
    ("data uri png", f'<img src="data:image/png;base64,{_b64_png}">'),
    ("base64 png bare", _b64_png),
    ("base64 text", base64.b64encode(b"hello world, this is not a secret").decode()),
    ("pytest summary", "===== 1287 passed, 12 skipped in 243.51s (0:04:03) ====="),
    ("pytest item", "tests/hooks/test_spool.py::test_a_killed_hook_is_found PASSED [ 42%]"),
    ("make", "make[2]: Leaving directory '/home/ci/build/src'"),
    ("gcc", "gcc -O2 -Wall -c src/token_bucket.c -o build/token_bucket.o"),
    ("npm install", "added 1289 packages, and audited 1290 packages in 37s"),
    ("pip", "Successfully installed click-8.1.7 pydantic-2.7.1 ruamel.yaml-0.18.6"),
    ("version", "loopx 0.1.0 (git 2.43.0, python 3.11.7)"),
    ("semver range", "requires node >=18.17.0 <21, found v20.11.1"),
    ("path", "/home/ci/.cache/pip/wheels/3f/a2/0c/9e8d7b6a5f4e3d2c1b0a/loopx.whl"),
    ("windows path", r"C:\Users\ci\AppData\Local\Temp\pytest-of-ci\pytest-12\test_x0"),
    ("url", "https://github.com/gitleaks/gitleaks/blob/v8.30.1/config/gitleaks.toml"),
    ("url query", "https://example.com/search?q=loopx+hooks&page=2&sort=recent"),
    ("git remote", "To github.com:acme/widgets.git\n   4f2a9c1..8b7e3d0  main -> main"),
    ("git log oneline", f"{r(HEX, 7)} spool: re-check the queue after the lock is released"),
    ("reflog", f"{r(HEX, 7)} HEAD@{{3}}: commit: add the killed-commit check"),
    ("timestamp", "2026-12-02T03:14:15.926535Z INFO drain finished in 12 ms"),
    ("log kv", "level=info component=spool entries=3 drained=3 failed=0"),
    ("cache key", "cache key: v3-linux-py311-deps"),
    ("primary key", "PRIMARY KEY (event_id, seq)"),
    ("token count", "prompt tokens: 1532, completion tokens: 211"),
    ("password prompt", "Enter password: "),
    ("password reset prose", "The password reset flow sends a link that expires after 30 minutes."),
    ("flag prose", "Use the --token option or set GITHUB_TOKEN in the environment."),
    ("secret prose", "Rotate the secret monthly; see docs/security.md for the schedule."),
    ("ssh fingerprint", "ED25519 key fingerprint is SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s."),
    ("gpg", "gpg: Signature made Tue 01 Dec 2026 10:00:00 UTC using RSA key ID 4AEE18F83AFDEB23"),
    ("k8s pod", "pod/api-7d9f8b6c5d-x2k4m   1/1   Running   0   3m12s"),
    ("aws arn", "arn:aws:iam::123456789012:role/ci-deploy"),
    ("ip and port", "listening on 127.0.0.1:8765 (pid 43121)"),
    ("json event", '{"kind": "todo.claimed", "todo": "t-7", "by": "agent:codex", "ttl": 3600}'),
    ("python tb", '  File "/work/loopx/features/spool.py", line 212, in drain'),
    ("diff header", "diff --git a/loopx/features/redact.py b/loopx/features/redact.py"),
    ("diff index", f"index {r(HEX, 7)}..{r(HEX, 7)} 100644"),
    ("mkdir -p", "mkdir -p build/out && cp -p dist/* build/out/"),
    ("ssh -p", "ssh -p 2222 deploy@build.example.com 'systemctl restart app'"),
]
