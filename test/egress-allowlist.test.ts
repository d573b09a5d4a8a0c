import { describe, expect, test } from "vitest";
import { addressClass } from "../src/egress/addresses.js";
import { parseAllowNet } from "../src/egress/allow-net.js";
import type { AllowRule } from "../src/egress/allow-rules.js";
import { checkResolved, matchHost } from "../src/egress/host-match.js";
import { endpointAccess } from "../src/egress/model-endpoints.js";
import { NETWORK_PRESETS } from "../src/egress/presets.js";
import { ruleWords } from "../src/egress/rule-words.js";
import { setupRules } from "../src/egress/setup-presets.js";
import { UsageError } from "../src/lib/errors.js";

const rules = (...values: string[]): AllowRule[] => values.flatMap((value) => parseAllowNet(value));
const allowed = (list: AllowRule[], host: string, port = 443) => matchHost(list, host, port).allowed;

describe("--allow-net values", () => {
  test("a preset is its ecosystem's hosts, each said to come from the preset", () => {
    const npm = rules("npm");
    expect(npm.map((rule) => (rule.kind === "host" ? rule.host : ""))).toEqual([...NETWORK_PRESETS.npm]);
    expect(ruleWords(npm[0]!)).toBe("registry.npmjs.org (npm preset, --allow-net npm)");
  });

  test("`*.example.com` reaches api.example.com and a.b.example.com, but not example.com or evil-example.com", () => {
    const list = rules("*.example.com");
    expect(allowed(list, "api.example.com")).toBe(true);
    expect(allowed(list, "a.b.example.com")).toBe(true);
    expect(allowed(list, "API.Example.COM.")).toBe(true);
    expect(allowed(list, "example.com")).toBe(false);
    expect(allowed(list, "evil-example.com")).toBe(false);
    expect(allowed(list, "example.com.evil.net")).toBe(false);
  });

  test("an exact host with a port allows only that port; without one, any port", () => {
    expect(allowed(rules("api.example.com:8443"), "api.example.com", 8443)).toBe(true);
    expect(allowed(rules("api.example.com:8443"), "api.example.com", 443)).toBe(false);
    expect(allowed(rules("api.example.com"), "api.example.com", 22)).toBe(true);
    expect(allowed(rules("API.example.com."), "api.example.com")).toBe(true);
  });

  test("IP literals: v4, v6 in brackets with or without a port", () => {
    expect(rules("10.0.0.5")).toEqual([expect.objectContaining({ kind: "host", host: "10.0.0.5", port: null })]);
    expect(rules("[fd00::1]:8080")).toEqual([expect.objectContaining({ kind: "host", host: "fd00::1", port: 8080 })]);
    expect(rules("[::1]")).toEqual([expect.objectContaining({ kind: "host", host: "::1", port: null })]);
    expect(rules("::1")).toEqual([expect.objectContaining({ kind: "host", host: "::1", port: null })]);
  });

  test("`*` is the host network, unfiltered", () => {
    const any = rules("*");
    expect(any).toEqual([expect.objectContaining({ kind: "any" })]);
    expect(allowed(any, "anything.example")).toBe(true);
    expect(allowed(any, "127.0.0.1")).toBe(true);
    expect(ruleWords(any[0]!)).toBe("any host (--allow-net *)");
  });

  test.each([
    ["", "name a host"],
    ["https://api.example.com/v1", "not a URL"],
    ["api.example.com/v1", "not a URL"],
    ["*.com", "too broad"],
    ["a*.example.com", "only *.domain"],
    ["*.example.com:443", "takes no port"],
    ["api.example.com:0", "not a port"],
    ["api.example.com:70000", "not a port"],
    ["api.example.com:http", "not a port"],
    ["bad_host!", "not a host name"],
    ["-leading.example.com", "not a host name"],
    [`${"a".repeat(64)}.example.com`, "not a host name"],
    ["[not-v6]:80", "brackets hold an IPv6 address"],
    ["evil.example\u0007", "control characters"],
    ["two words", "control characters"],
  ])("--allow-net %j is refused: %s", (value, why) => {
    let error: unknown;
    try {
      parseAllowNet(value);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).code).toBe("bad_allow_net");
    expect((error as UsageError).message).toContain(why);
    expect((error as UsageError).message).not.toContain("\n");
  });
});

describe("IP literals and names that resolve to private space", () => {
  test.each([
    ["127.0.0.1", "loopback"],
    ["127.8.9.10", "loopback"],
    ["::1", "loopback"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["10.1.2.3", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["100.64.0.1", "private"],
    ["fd12:3456::1", "private"],
    ["169.254.169.254", "link_local"],
    ["fe80::1", "link_local"],
    ["0.0.0.0", "unspecified"],
    ["::", "unspecified"],
    ["224.0.0.1", "multicast"],
    ["ff02::1", "multicast"],
    ["255.255.255.255", "reserved"],
    ["172.32.0.1", "public"],
    ["93.184.216.34", "public"],
    ["2606:2800:220:1::1", "public"],
    ["::ffff:93.184.216.34", "public"],
  ])("%s is %s", (address, kind) => {
    expect(addressClass(address)).toBe(kind);
  });

  test("an IP literal is reached only when a rule names it exactly; otherwise private ones say private_address", () => {
    expect(matchHost(rules("*.example.com"), "127.0.0.1", 80)).toEqual({ allowed: false, reason: "private_address" });
    expect(matchHost(rules("*.example.com"), "169.254.169.254", 80)).toEqual({ allowed: false, reason: "private_address" });
    expect(matchHost(rules("*.example.com"), "93.184.216.34", 80)).toEqual({ allowed: false, reason: "not_allowed" });
    expect(matchHost(rules("10.0.0.5"), "10.0.0.5", 80).allowed).toBe(true);
    expect(matchHost(rules("10.0.0.5"), "10.0.0.6", 80).allowed).toBe(false);
  });

  test("a name that resolves to a private address passes only a rule that names it exactly", () => {
    const [wildcard] = rules("*.example.com");
    const [exact] = rules("gateway.corp.example");
    expect(checkResolved(wildcard!, "rebind.example.com", "127.0.0.1")).toEqual({ allowed: false, reason: "private_address" });
    expect(checkResolved(wildcard!, "api.example.com", "93.184.216.34").allowed).toBe(true);
    expect(checkResolved(exact!, "gateway.corp.example", "10.0.0.5").allowed).toBe(true);
    const [preset] = rules("npm");
    expect(checkResolved(preset!, "registry.npmjs.org", "192.168.0.10").allowed).toBe(true);
  });
});

describe("the registries a setup command needs, read from its words", () => {
  const presetsOf = (command: string) => [...new Set(setupRules([command]).map((rule) => (rule.kind === "host" ? rule.preset : null)))];

  test.each([
    ["npm ci", ["npm"]],
    ["npm install --no-audit", ["npm"]],
    ["CI=1 npm ci && npm run build", ["npm"]],
    ["yarn", ["npm"]],
    ["pnpm install --frozen-lockfile", ["npm"]],
    ["pip install -r requirements.txt", ["pypi"]],
    ["python3 -m pip install -e .", ["pypi"]],
    ["uv sync", ["pypi"]],
    ["poetry install", ["pypi"]],
    ["cargo build --locked", ["crates"]],
    ["go mod download", ["go"]],
    ["git clone https://github.com/acme/fixtures vendor/fixtures", ["github"]],
    ["sh -c 'npm ci; pip install .'", ["npm", "pypi"]],
    ["npm run build", []],
    ["make", []],
    ["git clone https://gitlab.com/acme/fixtures", []],
    ["echo npm ci", []],
  ])("%j gets %j", (command, expected) => {
    expect(presetsOf(command)).toEqual(expected);
  });

  test("each rule says which command it came from", () => {
    const [rule] = setupRules(["npm ci"]);
    expect(ruleWords(rule!)).toBe('registry.npmjs.org (npm preset, from "npm ci")');
  });
});

describe("a backend's model endpoints", () => {
  test("a local model server gets a rule for its host and port and a tunnel; a remote API a rule only", () => {
    const { rules: made, tunnels } = endpointAccess("claude", [
      { url: "http://127.0.0.1:43210", why: "ANTHROPIC_BASE_URL" },
      { url: "https://api.anthropic.com", why: "its model API" },
    ]);
    expect(tunnels).toEqual([expect.objectContaining({ listen: 43210, host: "127.0.0.1", port: 43210 })]);
    expect(matchHost(made, "127.0.0.1", 43210).allowed).toBe(true);
    expect(matchHost(made, "127.0.0.1", 43211).allowed).toBe(false);
    expect(matchHost(made, "api.anthropic.com", 443).allowed).toBe(true);
    expect(matchHost(made, "api.anthropic.com", 80).allowed).toBe(false);
    expect(ruleWords(made[1]!)).toBe("api.anthropic.com:443 (claude: its model API)");
  });

  test("an endpoint that is not an http(s) URL or a host is left out", () => {
    expect(
      endpointAccess("pi", [
        { url: "ftp://example.com", why: "x" },
        { url: "not a host", why: "y" },
      ]).rules,
    ).toEqual([]);
  });
});
