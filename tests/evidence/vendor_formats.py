"""An independent corpus of credential formats the catalogue does not name (issue 29).

Each format is a vendor's documented token shape (prefix, alphabet, length, separators), written
down from the vendor's own documentation of its keys, never from a scanner's rules or from
:mod:`pytest_specgate.evidence._secret_rules`; every token is built here from that shape with
random characters (a seeded generator, so a failure names a reproducible value). None is a real
credential. Shapes the catalogue already names (``sk-``, ``hf_``, ``ghp_``, ``AKIA``, ``xoxb-``,
``glpat-``, ``AIza``, ``npm_``, ``pypi-``, ``sk_live_``, ``SG.``, JWTs, PEM keys...) are left out
on purpose: this corpus measures what the redactor finds without knowing the vendor.

A format is ``(vendor, documented shape, template)``: the template's ``{A:n}`` fields are ``n``
random characters of alphabet ``A`` (see :data:`ALPHABETS`), the rest is literal.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

ALPHABETS = {
    "a": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    "l": "abcdefghijklmnopqrstuvwxyz0123456789",
    "u": "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    "h": "0123456789abcdef",
    "H": "0123456789ABCDEF",
    "b": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_",
    "s": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/",
    "d": "0123456789",
    "z": "abcdefghijklmnopqrstuvwxyz234567",
}
_FIELD = re.compile(r"\{([a-zA-Z]):(\d+)\}")


@dataclass(frozen=True)
class VendorFormat:
    vendor: str
    shape: str
    template: str

    def build(self, rng: random.Random) -> tuple[str, list[str]]:
        """A token of this shape and its random fields of 8 characters or more that are not
        digits only (a numeric id, and a field that came out all digits, reads as a number)."""
        fields: list[str] = []

        def field(match: re.Match[str]) -> str:
            drawn = "".join(rng.choices(ALPHABETS[match.group(1)], k=int(match.group(2))))
            if len(drawn) >= 8 and not drawn.isdigit():
                fields.append(drawn)
            return drawn

        return _FIELD.sub(field, self.template), fields


F = VendorFormat
FORMATS: tuple[VendorFormat, ...] = (
    F("Atlassian Cloud API token", "ATATT3xFfGF0 + base64url", "ATATT3xFfGF0{b:180}"),
    F("Azure DevOps PAT", "52 lowercase base32 characters", "{z:52}"),
    F("Azure Storage account key", "88 base64 characters ending ==", "{s:86}=="),
    F("Microsoft Entra client secret", "3 characters, 8Q~, 31 characters", "{a:3}8Q~{b:31}"),
    F("Alibaba Cloud AccessKey ID", "LTAI + 20 alphanumerics", "LTAI{a:20}"),
    F("Alibaba Cloud AccessKey secret", "30 alphanumerics", "{a:30}"),
    F("Tencent Cloud SecretId", "AKID + 32 alphanumerics", "AKID{a:32}"),
    F("IBM Cloud API key", "44 base64url characters", "{b:44}"),
    F("Cloudflare API token", "40 base64url characters", "{b:40}"),
    F("Cloudflare Origin CA key", "v1.0- + 24 hex + - + 146 hex", "v1.0-{h:24}-{h:146}"),
    F("Fastly API token", "32 base64url characters", "{b:32}"),
    F("Heroku platform API key", "HRKU-AA + 58 base64url", "HRKU-AA{b:58}"),
    F("Netlify personal access token", "nfp_ + 36 alphanumerics", "nfp_{a:36}"),
    F("Vercel access token", "24 alphanumerics", "{a:24}"),
    F("Render API key", "rnd_ + 32 alphanumerics", "rnd_{a:32}"),
    F("Fly.io token", "fo1_ + 43 base64url", "fo1_{b:43}"),
    F("Supabase access token", "sbp_ + 40 hex", "sbp_{h:40}"),
    F("Supabase secret key", "sb_secret_ + 31 base64url", "sb_secret_{b:31}"),
    F("PlanetScale service token", "pscale_tkn_ + 43 base64url", "pscale_tkn_{b:43}"),
    F("PlanetScale password", "pscale_pw_ + 43 base64url", "pscale_pw_{b:43}"),
    F("Neon API key", "napi_ + 64 alphanumerics", "napi_{a:64}"),
    F("Confluent Cloud API secret", "64 base64 characters", "{s:64}"),
    F("Algolia admin API key", "32 hex", "{h:32}"),
    F("Mailgun API key", "key- + 32 hex", "key-{h:32}"),
    F("Mailchimp API key", "32 hex + -us + datacenter", "{h:32}-us{d:2}"),
    F("Twilio Account SID", "AC + 32 hex", "AC{h:32}"),
    F("Twilio auth token", "32 hex", "{h:32}"),
    F("Vonage API secret", "16 alphanumerics", "{a:16}"),
    F("Plivo auth token", "40 alphanumerics", "{a:40}"),
    F("Telegram bot token", "bot id : AA + 33 base64url", "{d:10}:AA{b:33}"),
    F("Discord bot token", "M + 23 . 6 . 38 base64url", "M{b:23}.{b:6}.{b:38}"),
    F("Zoom client secret", "32 alphanumerics", "{a:32}"),
    F("Dropbox short-lived access token", "sl. + 135 base64url", "sl.B{b:135}"),
    F("Box developer token", "32 alphanumerics", "{a:32}"),
    F("Asana personal access token", "2/ + 16 digits + / + 16 digits + : + 32 hex", "2/{d:16}/{d:16}:{h:32}"),
    F("Notion integration secret", "ntn_ + 46 alphanumerics", "ntn_{a:46}"),
    F("Notion legacy integration secret", "secret_ + 43 alphanumerics", "secret_{a:43}"),
    F("Airtable personal access token", "pat + 14 alphanumerics + . + 64 hex", "pat{a:14}.{h:64}"),
    F("Trello API token", "ATTA + 64 hex + 8 hex", "ATTA{h:72}"),
    F("ClickUp personal token", "pk_ + digits + _ + 32 uppercase alphanumerics", "pk_{d:8}_{u:32}"),
    F("Figma personal access token", "figd_ + 40 base64url", "figd_{b:40}"),
    F("Sentry organization token", "sntrys_ + base64 + _ + 43", "sntrys_{a:60}_{b:43}"),
    F("Sentry user token", "sntryu_ + 64 hex", "sntryu_{h:64}"),
    F("Datadog API key", "32 hex", "{h:32}"),
    F("New Relic user API key", "NRAK- + 27 uppercase alphanumerics", "NRAK-{u:27}"),
    F("New Relic ingest license key", "40 hex ending NRAL", "{h:36}NRAL"),
    F("Honeycomb ingest key", "hcaik_ + 58 alphanumerics", "hcaik_{a:58}"),
    F("PagerDuty REST API key", "u+ + 18 base64url", "u+{b:18}"),
    F("Elastic serverless API key", "essu_ + 80 base64", "essu_{s:80}"),
    F("Bitbucket app password", "ATBB + 32 alphanumerics", "ATBB{a:32}"),
    F("CircleCI personal API token", "CCIPAT_ + 22 + _ + 40 hex", "CCIPAT_{a:22}_{h:40}"),
    F("Travis CI API token", "22 alphanumerics", "{a:22}"),
    F("Buildkite API access token", "bkua_ + 40 hex", "bkua_{h:40}"),
    F("Docker Hub personal access token", "dckr_pat_ + 27 base64url", "dckr_pat_{b:27}"),
    F("JFrog API key", "AKCp + 69 alphanumerics", "AKCp{a:69}"),
    F("SonarQube user token", "squ_ + 40 hex", "squ_{h:40}"),
    F("SonarQube project token", "sqp_ + 40 hex", "sqp_{h:40}"),
    F("Terraform Cloud API token", "14 . atlasv1 . 67 alphanumerics", "{a:14}.atlasv1.{a:67}"),
    F("Okta API token", "00 + 40 base64url", "00{b:40}"),
    F("Auth0 client secret", "64 base64url", "{b:64}"),
    F("1Password service account token", "ops_ + base64url", "ops_eyJ{b:240}"),
    F("Doppler service token", "dp.st. + environment + . + 40", "dp.st.prd.{a:40}"),
    F("Pinecone API key", "pcsk_ + 5 + _ + 60 alphanumerics", "pcsk_{a:5}_{a:60}"),
    F("Cohere API key", "40 alphanumerics", "{a:40}"),
    F("Mistral API key", "32 alphanumerics", "{a:32}"),
    F("Groq API key", "gsk_ + 52 alphanumerics", "gsk_{a:52}"),
    F("Replicate API token", "r8_ + 37 alphanumerics", "r8_{a:37}"),
    F("Together AI API key", "tgp_v1_ + 43 base64url", "tgp_v1_{b:43}"),
    F("Perplexity API key", "pplx- + 48 alphanumerics", "pplx-{a:48}"),
    F("xAI API key", "xai- + 80 alphanumerics", "xai-{a:80}"),
    F("Fireworks AI API key", "fw_ + 24 alphanumerics", "fw_{a:24}"),
    F("LangSmith personal access token", "lsv2_pt_ + 32 hex + _ + 10 hex", "lsv2_pt_{h:32}_{h:10}"),
    F("Voyage AI API key", "pa- + 43 base64url", "pa-{b:43}"),
    F("AssemblyAI API key", "32 hex", "{h:32}"),
    F("ElevenLabs API key", "sk_ + 48 hex", "sk_{h:48}"),
    F("Google OAuth client secret", "GOCSPX- + 28 base64url", "GOCSPX-{b:28}"),
    F("Google OAuth refresh token", "1//0 + 100 base64url", "1//0{b:100}"),
    F("Google OAuth access token", "ya29. + 150 base64url", "ya29.{b:150}"),
    F("Meta (Facebook) access token", "EAAB + 180 alphanumerics", "EAAB{a:180}"),
    F("Instagram Graph access token", "IGQV + 150 base64url", "IGQV{b:150}"),
    F("X (Twitter) app bearer token", "21 A + 80 alphanumerics with %",
      "AAAAAAAAAAAAAAAAAAAAA{a:40}%2B{a:40}"),
    F("LinkedIn access token", "AQV + 150 base64url", "AQV{b:150}"),
    F("Square access token", "EAAA + 60 base64url", "EAAA{b:60}"),
    F("Square OAuth secret", "sq0csp- + 43 base64url", "sq0csp-{b:43}"),
    F("Braintree access token", "access_token$production$ + 16 + $ + 32 hex",
      "access_token$production${a:16}${h:32}"),
    F("Razorpay key secret", "24 alphanumerics", "{a:24}"),
    F("Flutterwave secret key", "FLWSECK- + 32 hex + -X", "FLWSECK-{h:32}-X"),
    F("Mapbox secret token", "sk. + base64url JSON + . + 22", "sk.eyJ1Ijoi{b:40}.{b:22}"),
    F("Segment write key", "32 alphanumerics", "{a:32}"),
    F("Intercom access token", "dG9rOj + base64 ending ==", "dG9rOj{s:54}=="),
    F("Zendesk API token", "40 alphanumerics", "{a:40}"),
    F("HubSpot private app token", "pat-na1- + UUID", "pat-na1-{h:8}-{h:4}-{h:4}-{h:4}-{h:12}"),
    F("Stripe webhook signing secret", "whsec_ + 32 base64", "whsec_{a:32}"),
    F("Slack signing secret", "32 hex", "{h:32}"),
    F("Contentful personal access token", "CFPAT- + 43 base64url", "CFPAT-{b:43}"),
    F("Prefect API key", "pnu_ + 36 alphanumerics", "pnu_{a:36}"),
    F("Dynatrace API token", "dt0c01. + 24 + . + 64 uppercase", "dt0c01.{u:24}.{u:64}"),
    F("Octopus Deploy API key", "API- + 26 uppercase alphanumerics", "API-{u:26}"),
    F("Scaleway secret key", "UUID-shaped with prefix", "scw-secret-{h:8}-{h:4}-{h:4}-{h:4}-{h:12}"),
    F("Vultr API key", "36 uppercase alphanumerics", "{u:36}"),
    F("Hetzner Cloud API token", "64 alphanumerics", "{a:64}"),
    F("Backblaze B2 application key", "K005 + 27 base64", "K005{s:27}"),
    F("RubyGems API key", "rubygems_ + 48 hex", "rubygems_{h:48}"),
    F("NuGet API key", "oy2 + 43 lowercase base32", "oy2{l:43}"),
    F("crates.io API token", "cio + 32 alphanumerics", "cio{a:32}"),
    F("Clojars deploy token", "CLOJARS_ + 60 hex", "CLOJARS_{h:60}"),
    F("Frame.io developer token", "fio-u- + 64 base64url", "fio-u-{b:64}"),
    F("Typeform personal token", "tfp_ + 44 + _ + 14", "tfp_{a:44}_{a:14}"),
    F("Shippo live token", "shippo_live_ + 40 hex", "shippo_live_{h:40}"),
    F("EasyPost API key", "EZAK + 54 alphanumerics", "EZAK{a:54}"),
    F("LaunchDarkly API access token", "api- + UUID", "api-{h:8}-{h:4}-{h:4}-{h:4}-{h:12}"),
    F("Tailscale auth key", "tskey-auth- + 17 + - + 33", "tskey-auth-{a:17}-{a:33}"),
    F("ngrok authtoken", "2 + 26 alphanumerics + _ + 21 alphanumerics", "2{a:26}_{a:21}"),
    F("Matrix access token", "syt_ + base64 user + _ + 20 + _ + 6", "syt_{a:12}_{a:20}_{a:6}"),
    F("Mastodon access token", "43 base64url", "{b:43}"),
    F("OpenShift OAuth access token", "sha256~ + 43 base64url", "sha256~{b:43}"),
    F("Salesforce session id", "00D + 12 + ! + 96", "00D{a:12}!{b:96}"),
    F("Klaviyo private API key", "pk_ + 34 hex", "pk_{h:34}"),
    F("Brevo API key", "xkeysib- + 64 hex + - + 16 alphanumerics", "xkeysib-{h:64}-{a:16}"),
    F("Resend API key", "re_ + 8 + _ + 24", "re_{a:8}_{a:24}"),
    F("Modal token secret", "as- + 22 alphanumerics", "as-{a:22}"),
    F("RunPod API key", "rpa_ + 40 uppercase alphanumerics", "rpa_{u:40}"),
    F("Cerebras API key", "csk- + 48 lowercase alphanumerics", "csk-{l:48}"),
    F("Tavily API key", "tvly- + 32 alphanumerics", "tvly-{a:32}"),
    F("Brave Search API key", "BSA + 28 alphanumerics", "BSA{a:28}"),
    F("Firecrawl API key", "fc- + 32 hex", "fc-{h:32}"),
    F("Yandex Cloud OAuth token", "y0_ + 55 base64url", "y0_{b:55}"),
    F("Defined Networking API key", "dnkey- + 26 + - + 52", "dnkey-{u:26}-{u:52}"),
    F("Harness API key", "pat. + 22 + . + 24 + . + 20", "pat.{a:22}.{a:24}.{a:20}"),
    F("Lob live API key", "live_ + 35 hex", "live_{h:35}"),
)
"""Shapes, beyond the catalogue, as their vendors document them."""

CONTEXT_FORMS: tuple[str, ...] = (
    "{token}",
    "export SERVICE_CREDENTIAL={token}",
    "Authorization: Bearer {token}",
    '{{"api_key": "{token}"}}',
    "client_secret: {token}",
    "ACCOUNT 1234567890 KEY {token}",
    "token='{token}'",
)
"""How a format is written where a run meets it: alone, as a variable, a header, JSON, YAML,
positional beside an account id, a Python repr."""


@dataclass(frozen=True)
class Planted:
    vendor: VendorFormat
    token: str
    cores: tuple[str, ...]
    """What must not survive: the token's random fields (its literal prefix may)."""


def corpus(seed: int = 29) -> list[Planted]:
    """One token of every format, built from its shape with seeded random characters."""
    rng = random.Random(seed)
    planted = []
    for vendor in FORMATS:
        token, fields = vendor.build(rng)
        planted.append(Planted(vendor, token, tuple(fields)))
    return planted
