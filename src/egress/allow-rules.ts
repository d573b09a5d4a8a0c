/**
 * Which hosts a contained process may reach through handoff's egress proxy: default deny, a list of rules. Each rule
 * says where it came from, so the records and the reports can name why a host was allowed.
 * CONTRACT (filled in by the allowlist work): the types below are fixed; the functions are to be implemented.
 */

/** Where a rule came from. */
export type RuleSource =
  /** `--allow-net` (or `allowNet` in .handoff.json or a batch line), as the user wrote it. */
  | { readonly kind: "option"; readonly value: string }
  /** The backend's own needs: its model API, its login and token-refresh hosts, or a base URL its config names. */
  | { readonly kind: "backend"; readonly name: string; readonly why: string }
  /** A registry preset a setup command needs (`npm ci` → npm), inferred from the command's words. */
  | { readonly kind: "setup"; readonly command: string };

export type AllowRule =
  /** `--allow-net '*'`: the host network as it is, unfiltered. */
  | { readonly kind: "any"; readonly source: RuleSource }
  /** One host (lower case, no trailing dot; an IP literal as written), on any port unless `port` is set. */
  | {
      readonly kind: "host";
      readonly host: string;
      readonly port: number | null;
      readonly preset: string | null;
      readonly source: RuleSource;
    }
  /** `*.example.com`: every name below example.com, not example.com itself. */
  | { readonly kind: "suffix"; readonly suffix: string; readonly preset: string | null; readonly source: RuleSource };

/** Why a connection was refused. */
export type BlockReason =
  /** No rule names the host. */
  | "not_allowed"
  /** An IP literal, or a name that resolved to loopback, link-local, private or otherwise non-public space, that no rule names exactly. */
  | "private_address"
  /** A CONNECT whose TLS ClientHello names another host (SNI) than the one requested. */
  | "sni_mismatch"
  /** The name did not resolve. */
  | "unresolved"
  /** A request the proxy cannot read (no host, a bad port, not HTTP). */
  | "bad_request"
  /** A TCP connect or UDP datagram around the proxy: the sandbox's empty network refused it. */
  | "outside_proxy"
  /** A DNS query: the sandbox has no name server; the proxy resolves the hosts the allowlist names. */
  | "dns_lookup";

export type HostDecision = { readonly allowed: true; readonly rule: AllowRule } | { readonly allowed: false; readonly reason: BlockReason };
