import { isIP } from "node:net";
import { type SettingNames, UsageError } from "../lib/errors.js";
import { escapeControls } from "../vocabulary/display.js";
import type { AllowRule, RuleSource } from "./allow-rules.js";
import { NETWORK_PRESETS, PRESET_NAMES, isPresetName } from "./presets.js";

/** A DNS name's longest written form. */
const MAX_HOST_LENGTH = 253;
const LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;

/**
 * One `allowNet` (`--allow-net`) value as rules: a preset's hosts, `*` (the host network), `*.example.com` (names below it), or one
 * host (`api.example.com`, `api.example.com:8443`, `10.0.0.5`, `[fd00::1]:8080`). Anything else is a usage error.
 */
export function parseAllowNet(value: string, name = (names: SettingNames) => names.name("allowNet")): AllowRule[] {
  const source: RuleSource = { kind: "option", value };
  const written = value.trim();
  const refuse = (why: string) =>
    new UsageError("bad_allow_net", (names) => `${name(names)} '${escapeControls(value.slice(0, 100))}': ${why}`);
  if (written === "") throw refuse("name a host, a *.domain or a preset");
  if (written === "*") return [{ kind: "any", source }];
  if (isPresetName(written)) return NETWORK_PRESETS[written].map((host) => ({ kind: "host", host, port: null, preset: written, source }));
  if (/[\u0000-\u001f\u007f\s]/.test(written)) throw refuse("a host name has no spaces or control characters");
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(written) || written.includes("/"))
    throw refuse("name a host, not a URL (api.example.com, not https://api.example.com/v1)");
  const { host, port } = splitPort(written, refuse);
  if (host.startsWith("*.")) {
    if (port !== null) throw refuse("a *.domain takes no port");
    const suffix = checkedName(host.slice(2), refuse);
    if (!suffix.includes(".")) throw refuse(`*.${suffix} is too broad: name a domain of at least two labels (*.example.com)`);
    return [{ kind: "suffix", suffix, preset: null, source }];
  }
  if (host.includes("*")) throw refuse("a wildcard is only *.domain, as the first label");
  if (isIP(host) !== 0) return [{ kind: "host", host: host.toLowerCase(), port, preset: null, source }];
  return [{ kind: "host", host: checkedName(host, refuse), port, preset: null, source }];
}

/** `host:port` or `[ipv6]:port` into its parts; a bare IPv6 literal has no port. */
function splitPort(written: string, refuse: (why: string) => UsageError): { host: string; port: number | null } {
  const bracketed = /^\[([^\]]+)\](?::(.*))?$/.exec(written);
  if (bracketed) {
    if (isIP(bracketed[1]!) !== 6) throw refuse("brackets hold an IPv6 address");
    return { host: bracketed[1]!, port: bracketed[2] === undefined ? null : portOf(bracketed[2], refuse) };
  }
  if (isIP(written) === 6) return { host: written, port: null };
  const colon = written.lastIndexOf(":");
  if (colon === -1) return { host: written, port: null };
  return { host: written.slice(0, colon), port: portOf(written.slice(colon + 1), refuse) };
}

function portOf(text: string, refuse: (why: string) => UsageError): number {
  const port = /^\d{1,5}$/.test(text) ? Number(text) : Number.NaN;
  if (!(port >= 1 && port <= 65535)) throw refuse(`'${escapeControls(text.slice(0, 20))}' is not a port (1 to 65535)`);
  return port;
}

/** A DNS name, lower case, one trailing dot dropped; refused when it cannot be one. */
function checkedName(name: string, refuse: (why: string) => UsageError): string {
  const host = name.toLowerCase().replace(/\.$/, "");
  if (host.length === 0 || host.length > MAX_HOST_LENGTH || !host.split(".").every((label) => LABEL.test(label)))
    throw refuse(`not a host name (letters, digits, '-' and '.'; the presets are ${PRESET_NAMES.join(", ")})`);
  return host;
}
