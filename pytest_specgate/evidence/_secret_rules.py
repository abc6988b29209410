"""The secret formats redaction knows, kept as data, each naming the rule it comes from.

Why data taken from a secret scanner's catalogue, and why not the scanner itself: gitleaks
(``config/gitleaks.toml``, generated from ``cmd/generate/config/rules/*.go``) and Yelp's
detect-secrets (``detect_secrets/plugins/*.py``) are the two maintained catalogues of what a
credential looks like, and they are kept up to date as vendors change formats. Their engines
do not fit here: gitleaks is a Go binary (RE2, linear time) and its rules do not all compile
or stay linear in Python's backtracking ``re`` (lazy ``[\\s\\S-]{64,}?`` for private keys,
``\\w*`` affixes); detect-secrets scans line by line, its keyword plugin's patterns backtrack
(``(?=[^\\v'\"]*)(?=\\w+)[^\\v'\"]*``) and it reports findings instead of rewriting text. So
each format is copied here with its source (gitleaks rule id or detect-secrets plugin, or the
vendor's document for formats neither scanner has), rewritten where needed so that every
pattern starts only where its literal prefix starts and scans each character a bounded
number of times; :mod:`._redact` compiles them into its rule list.
The independent check is tests/evidence/data/secret_corpus.json, built from the scanners'
own test fixtures, never from these patterns.

A token format may continue over one line break (``TOKEN_SPLIT``): a token wrapped by a log,
a terminal or a markdown renderer is still one secret.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_specgate.evidence._generic_secrets import KEYWORD_VALUE_LINES

GITLEAKS = "gitleaks v8 cmd/generate/config/rules"
DETECT_SECRETS = "detect-secrets 1.5 plugin"

TOKEN_SPLIT = r"\r?\n[ \t]{0,8}"
"""A line break, with the indentation a wrapped line may get."""
RANDOM_TAIL = r"(?=[^\s0-9]*+[0-9]|[^\sa-z]*+[a-z][^\sA-Z]*+[A-Z])"
"""The next word has a digit, or a capital after a small letter (``vOxJQ``): the tail of a
random token, not a word (``Bearer``, ``Starting``)."""


@dataclass(frozen=True)
class TokenFormat:
    """A credential that starts with a fixed prefix: ``prefix`` then ``body`` characters.

    ``prefix`` starts with one literal character (the regex engine skips ahead to it, and a
    look-behind on it keeps the match from starting inside a longer word); ``shortest`` body
    characters make a token, and a body cut by a line break before ``longest`` characters
    continues on the next line. A body has no ``=``: base64 padding ends a token, so
    ``…MA====Bearer x`` keeps its ``Bearer``.
    """

    rule_id: str
    source: str
    prefix: str
    body: str
    shortest: int
    longest: int
    placeholder: str = "<SECRET>"
    boundary: str = "[A-Za-z0-9]"
    """Characters that may not come right before the prefix ("" for none)."""
    literals: tuple[str, ...] = ()
    """The prefix spelled out, when it is not a plain word, for its base64 and hex forms."""

    @property
    def encodable(self) -> tuple[str, ...]:
        """Prefixes whose base64 and hex forms mark an encoded token of this format."""
        plain = self.prefix.isascii() and self.prefix.replace("_", "").replace("-", "").isalnum()
        return self.literals or ((self.prefix,) if plain else ())


TOKEN_FORMATS: tuple[TokenFormat, ...] = (
    TokenFormat("huggingface-access-token", GITLEAKS + "/huggingface.go (TruffleHog allows digits)",
                "hf_", "[A-Za-z0-9]", 30, 34, "<HF_TOKEN>", boundary=""),
    TokenFormat("huggingface-organization-api-token", GITLEAKS + "/huggingface.go",
                "api_org_", "[A-Za-z0-9]", 30, 34),
    TokenFormat("openai-api-key, anthropic-api-key", GITLEAKS + "/openai.go, anthropic.go",
                "sk-", "[A-Za-z0-9_-]", 20, 200, boundary="[A-Za-z0-9_]"),
    TokenFormat("aws-access-token", GITLEAKS + "/aws.go; " + DETECT_SECRETS + " AWSKeyDetector",
                "A(?:3T[A-Z0-9]|KIA|SIA|BIA|CCA)", "[A-Z0-9]", 16, 16,
                literals=("AKIA", "ASIA", "ABIA", "ACCA")),
    TokenFormat("aws-amazon-bedrock-api-key-long-lived", GITLEAKS + "/aws.go",
                "ABSK", "[A-Za-z0-9+/]", 100, 272),
    TokenFormat("github-pat, github-oauth, github-app-token, github-refresh-token",
                GITLEAKS + "/github.go; " + DETECT_SECRETS + " GitHubTokenDetector",
                "gh[pousr]_", "[A-Za-z0-9_]", 36, 36, literals=("ghp_", "gho_", "ghs_", "ghu_", "ghr_")),
    TokenFormat("github-fine-grained-pat", GITLEAKS + "/github.go", "github_pat_", r"\w", 82, 82),
    TokenFormat("gitlab-pat, gitlab-deploy-token, gitlab-*-token", GITLEAKS + "/gitlab.go; "
                + DETECT_SECRETS + " GitLabTokenDetector",
                "gl(?:pat|dt|ft|rt|ptt|oas|imt|cbt|ffct|agent|soat)-", r"[\w-]", 20, 64),
    TokenFormat("slack-bot-token, slack-user-token, slack-legacy-*, slack-config-*-token",
                GITLEAKS + "/slack.go; " + DETECT_SECRETS + " SlackDetector",
                "xox[abeoprs][.-]", "[A-Za-z0-9.-]", 12, 180, literals=("xoxb-", "xoxp-", "xoxa-")),
    TokenFormat("slack-app-token", GITLEAKS + "/slack.go", "xapp-", "[A-Za-z0-9-]", 20, 120),
    TokenFormat("slack-webhook-url", GITLEAKS + "/slack.go; " + DETECT_SECRETS + " SlackDetector",
                "hooks\\.slack\\.com/(?:services|workflows|triggers)/", "[A-Za-z0-9+/_-]", 20, 60,
                boundary=""),
    TokenFormat("discord webhook url", "Discord developer docs, Webhook resource (execute webhook URL)",
                "discord(?:app)?\\.com/api/webhooks/", "[A-Za-z0-9/_-]", 20, 120, boundary=""),
    TokenFormat("microsoft-teams-webhook", GITLEAKS + "/teams.go",
                "webhookb2/", "[A-Za-z0-9@/-]", 40, 200, boundary=""),
    TokenFormat("gitlab-rrt", GITLEAKS + "/gitlab.go; " + DETECT_SECRETS + " GitLabTokenDetector",
                "GR1348941", r"[\w-]", 16, 80),
    TokenFormat("aws-amazon-bedrock-api-key-short-lived", GITLEAKS + "/aws.go",
                "bedrock-api-key-", "[A-Za-z0-9+/]", 20, 2000),
    TokenFormat("twilio-api-key", GITLEAKS + "/twilio.go; " + DETECT_SECRETS + " TwilioKeyDetector",
                "SK", "[0-9a-fA-F]", 32, 32),
    TokenFormat("databricks-api-token", GITLEAKS + "/databricks.go", "dapi", "[a-f0-9-]", 32, 34),
    TokenFormat("postman-api-token", GITLEAKS + "/postman.go", "PMAK-", "[A-Fa-f0-9-]", 59, 59),
    TokenFormat("pulumi-api-token", GITLEAKS + "/pulumi.go", "pul-", "[a-f0-9]", 40, 40),
    TokenFormat("gcp-api-key", GITLEAKS + "/gcp.go", "AIza", r"[\w-]", 35, 35),
    TokenFormat("npm-access-token", GITLEAKS + "/npm.go; " + DETECT_SECRETS + " NpmDetector",
                "npm_", "[A-Za-z0-9]", 36, 36),
    TokenFormat("pypi-upload-token", GITLEAKS + "/pypi.go; " + DETECT_SECRETS + " PypiTokenDetector",
                "pypi-AgEIcHlwaS5vcmc", r"[\w-]", 50, 1000),
    TokenFormat("stripe-access-token", GITLEAKS + "/stripe.go; " + DETECT_SECRETS + " StripeDetector",
                "sk_(?:test|live|prod)_", "[A-Za-z0-9]", 10, 110, boundary="[A-Za-z0-9_]",
                literals=("sk_live_", "sk_test_")),
    TokenFormat("stripe-access-token (restricted)", GITLEAKS + "/stripe.go", "rk_(?:test|live|prod)_",
                "[A-Za-z0-9]", 10, 110, boundary="[A-Za-z0-9_]", literals=("rk_live_",)),
    TokenFormat("sendgrid-api-token", GITLEAKS + "/sendgrid.go; " + DETECT_SECRETS + " SendGridDetector",
                "SG\\.", "[A-Za-z0-9=_.-]", 60, 66),
    TokenFormat("digitalocean-pat, -access-token, -refresh-token", GITLEAKS + "/digitalocean.go",
                "do[opr]_v1_", "[a-f0-9]", 64, 64),
    TokenFormat("shopify-*-token", GITLEAKS + "/shopify.go", "shp(?:ss|at|ca|pa)_", "[a-fA-F0-9]", 32, 32),
    TokenFormat("grafana-cloud-api-token", GITLEAKS + "/grafana.go", "glc_", "[A-Za-z0-9+/]", 32, 400),
    TokenFormat("grafana-service-account-token", GITLEAKS + "/grafana.go", "glsa_", "[A-Za-z0-9_]", 40, 41),
    TokenFormat("grafana-api-key", GITLEAKS + "/grafana.go", "eyJrIjoi", "[A-Za-z0-9]", 70, 400),
    TokenFormat("vault-service-token, vault-batch-token", GITLEAKS + "/hashicorp_vault.go",
                "hv[sb]\\.", r"[\w-]", 90, 300),
    TokenFormat("linear-api-key", GITLEAKS + "/linear.go", "lin_api_", "[A-Za-z0-9]", 40, 40),
    TokenFormat("doppler-api-token", GITLEAKS + "/doppler.go", "dp\\.pt\\.", "[A-Za-z0-9]", 43, 43),
    TokenFormat("age-secret-key", GITLEAKS + "/age.go", "AGE-SECRET-KEY-1",
                "[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]", 58, 58),
    TokenFormat("jwt-base64", GITLEAKS + "/jwt.go", "ZXlK", "[A-Za-z0-9+/_-]", 40, 2000),
)


ENCODED_PREFIXES = ("eyJ", "-----BEGIN")
"""Starts of context formats (a JWT's header, a PEM block) whose base64 or hex form marks an
encoded credential too, beside the token prefixes."""


@dataclass(frozen=True)
class ContextFormat:
    """A credential found by its shape or by what surrounds it: ``pattern`` (group
    ``group``) replaced by ``placeholder``; ``check`` names the test a match must also pass
    (:mod:`._redact` holds them)."""

    rule_id: str
    source: str
    pattern: str
    placeholder: str = "<SECRET>"
    group: int = 0
    check: str = ""
    lines_with: str = ""
    """What every line holding a match of ``pattern`` matches in small letters (a pattern that
    never crosses a line): the redactor searches only those lines
    (tests/evidence/test_redact_scanner.py)."""
    found_before: str = ""
    """What each match holds at most ``longest`` characters after its start, for a pattern that
    starts with a character class: the rule is found from it (``RedactionRule.found_before``)."""
    longest: int = 0
    needs: tuple[str, ...] = ()
    """Literals one of which ``pattern`` holds as written (``RedactionRule.needs``)."""
    gate: tuple[str, ...] = ()
    """Small-letter literals one of which ``pattern`` holds in any case (``RedactionRule.gate``)."""
    scope: str = "line"
    """Where a later pass must search it (``RedactionRule.scope``): ``line`` for a pattern that
    never crosses a line (the default), ``joined`` for one that crosses a line break only after
    a token character, ``text`` for one that may cross any."""


_JWT_PART = rf"[A-Za-z0-9_-]*+(?:{TOKEN_SPLIT}[A-Za-z0-9_-]++)?"
_JWT_DOT = rf"(?:{TOKEN_SPLIT})?\.(?:{TOKEN_SPLIT})?"
"""A JWT's segments, each possibly cut by a line break, and the dots between them, with a
break on either side."""
_KEY_NAME = (
    r"(?:[_.-][A-Za-z0-9_.-]{0,23}|[A-Z][A-Za-z0-9_.-]{0,23})?"
    r"[\"'\]]{0,2}[ \t]{0,4}(?:=|:(?!:))=?[ \t]{0,4}[\"'`]?"
)
"""The rest of a key name after its keyword, as a part of its own (``_b64``, ``Id``, not the
``h`` that makes ``pat`` a ``path``), its closing quote, and an assignment (``=``, ``:``,
``:=``, ``==``; not the ``::`` of a node id, ``TestToken::test_a``)."""

CONTEXT_FORMATS: tuple[ContextFormat, ...] = (
    ContextFormat(
        "private-key",  # gitleaks' label class without "-", so an END line never runs into the next BEGIN
        GITLEAKS + "/privatekey.go; " + DETECT_SECRETS + " PrivateKeyDetector",
        r"-----BEGIN[ A-Z0-9_]{0,100}PRIVATE KEY(?: BLOCK)?-----(?:[^-]|-(?!----))*+"
        r"(?:-----END[ A-Z0-9_]{0,100}PRIVATE KEY(?: BLOCK)?-----)?",
        gate=("-----begin",),
        scope="text",
    ),
    ContextFormat(
        "pem-body",
        "RFC 7468 section 2 (PEM bodies: base64 lines of 64 characters); gitleaks private-key tps",
        r"[A-Za-z0-9+/](?<![A-Za-z0-9+/=][A-Za-z0-9+/])[A-Za-z0-9+/]{59,75}"
        r"(?:\r?\n[ \t]{0,8}[A-Za-z0-9+/]{60,76})++(?:\r?\n[ \t]{0,8}[A-Za-z0-9+/]{0,76}=*)?",
        check="random",
        found_before=r"\n[ \t]{0,8}[A-Za-z0-9+/]{60}",
        longest=77,
        gate=("\n",),
        scope="joined",
    ),
    ContextFormat(
        "jwt",
        GITLEAKS + "/jwt.go; " + DETECT_SECRETS + " JwtTokenDetector",
        rf"e(?<![A-Za-z0-9_-]e)y{_JWT_PART}{_JWT_DOT}e(?:{TOKEN_SPLIT})?y{_JWT_PART}"
        rf"(?:{_JWT_DOT}(?:[A-Za-z0-9_+/-]++(?:{TOKEN_SPLIT}{RANDOM_TAIL}[A-Za-z0-9_+/-]++)?)?=*)?",
        placeholder="<TOKEN>",
        check="jwt",
        gate=("ey",),
        scope="joined",
    ),
    ContextFormat(
        "signed-url-parameter",
        "AWS SigV4 query auth (X-Amz-*), Google Cloud signed URLs (X-Goog-*), Azure SAS (sig=), "
        "Google API keys (?key=), OAuth 2.0 RFC 6749 (access_token, code, client_secret)",
        r"[?&;](?i:x-amz-(?:signature|credential|security-token)|x-goog-(?:signature|credential)"
        r"|awsaccesskeyid|signature|sig|key|api[_-]?key|apikey|access[_-]?token|id[_-]?token"
        r"|refresh[_-]?token|token|auth|code|client[_-]?secret|secret|password|pwd|session|t)="
        r"([^&#;,()\[\]{}\s\"'`<>]{4,})",
        group=1,
        lines_with=r"[?&;][^\s=]{1,24}=",
    ),
    ContextFormat(
        "aws-secret-access-key",
        DETECT_SECRETS + " AWSKeyDetector (aws.{0,20}?key.{0,20}?['\"][0-9a-zA-Z/+]{40}['\"])",
        r"[aA](?i:(?<=a)ws)[^\n]{0,20}?(?i:key|pwd|pw|password|pass|token)[^\n]{0,20}?"
        r"[\"'=: ]([0-9a-zA-Z/+]{40})(?![0-9a-zA-Z/+])",
        group=1,
        lines_with="aws",
    ),
    ContextFormat(
        "high-entropy-key-value",
        DETECT_SECRETS + " KeywordDetector + Base64HighEntropyString/HexHighEntropyString "
        "(a random-looking value right after a credential keyword)",
        r"[kKsStTpPaAjJcC](?i:(?<=k)ey|(?<=s)ecret|(?<=s)ignature|(?<=s)ig|(?<=s)ession"
        r"|(?<=t)oken|(?<=p)assw(?:or)?d|(?<=p)wd|(?<=p)ass|(?<=p)at|(?<=p)rivate|(?<=a)uth"
        r"|(?<=j)wt|(?<=c)ookie|(?<=c)redentials?)"
        + _KEY_NAME
        + r"([A-Za-z0-9+/_=-]{16,})",
        group=1,
        check="keyword-random",
        lines_with=KEYWORD_VALUE_LINES,
    ),
    ContextFormat(
        "secret-env-name",
        "CI secret naming (GitHub Actions, GitLab CI): NAME=value where NAME ends in a "
        "credential word",
        r"[KPJWSTCD](?:EY_ID|EY|AT|WT|EBHOOK_URL|EBHOOK|ECRET|OKEN|ASSWORD|ASSWD|REDENTIALS?|SN"
        r"|IGNATURE)[\"']?[ \t]{0,4}(?:=|:(?!:))[ \t]{0,4}[\"']?([^\s\"'`,;<>()\[\]{}]{4,})",
        group=1,
        check="env-name",
        needs=("EY", "AT", "WT", "EBHOOK", "ECRET", "OKEN", "ASSW", "REDENTIAL", "SN", "IGNATURE"),
    ),
    ContextFormat(
        "cloud-internal-host",
        "AWS EC2 instance hostname types (ip-A-B-C-D, *.compute.internal, *.ec2.internal)",
        r"i(?<![A-Za-z0-9_-]i)p-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3}(?![\d])(?:\.[A-Za-z0-9-]++)*+",
        placeholder="<HOST>",
        gate=("ip-",),
    ),
)
