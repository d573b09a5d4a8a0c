import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AllowRule } from "../egress/allow-rules.js";
import { checkResolved, matchHost } from "../egress/host-match.js";
import { ruleWords } from "../egress/rule-words.js";
import { EgressGate } from "../egress/egress-gate.js";
import type { EgressLog } from "../egress/egress-log.js";
import type { EgressRole } from "../egress/egress-record.js";
import { type ModelEndpoint, endpointAccess } from "../egress/model-endpoints.js";
import { BASE_URL_TOKEN, type KeyRecord, type KeyRoute } from "../egress/key-route.js";
import { ModelForwarder, keyPlaceholder } from "../egress/model-forwarder.js";
import { type SandboxEntry, sandboxEntry } from "./sandbox-entry.js";

export type { NetworkAccess } from "../egress/egress-policy.js";

/** The backend's own hosts for one agent process: its model API, its login, a base URL its config names. */
export interface BackendNetwork {
  readonly backend: string;
  readonly endpoints: readonly ModelEndpoint[];
  /** Its model keys in the agent's environment, with their values: kept out of the sandbox when the network is filtered. */
  readonly keys?: readonly { readonly route: KeyRoute; readonly key: string }[];
  /** The user's login files linked into the CLI's home that it may rewrite (a refreshed OAuth token). */
  readonly logins?: readonly string[];
  /** Variables of the agent's environment named like a key or token that no key route takes: they stay with the agent. */
  readonly keptKeys?: readonly string[];
}

/** What a filtered process adds to its sandbox: the gate outside, the binds and entry inside, the proxy variables. */
export interface FilteredProcess {
  readonly gate: EgressGate;
  /** One per model key the agent was given: it adds the key outside the sandbox. */
  readonly forwarders: readonly ModelForwarder[];
  readonly keys: readonly KeyRecord[];
  /** Put first on the CLI's own command line: a key route's redirect to the forwarder (Codex's `-c …base_url=…`). */
  readonly leadingArgs: readonly string[];
  /** Read-only inside: the gate's socket directory. */
  readonly readOnly: readonly string[];
  /** The in-sandbox forwarder: what it needs visible, and the words put before the command. */
  readonly inside: SandboxEntry;
  readonly env: Readonly<Record<string, string>>;
}

export interface FilteredRequest {
  readonly role: EgressRole;
  readonly label: string;
  /** A private directory outside every sandbox's view, for the gate's sockets. */
  readonly scratch: string;
  readonly rules: readonly AllowRule[];
  readonly backend: BackendNetwork | null;
  readonly log: EgressLog;
  /** A file the command waits for before it starts (the packet watch's), or null. */
  readonly ready?: string | null;
}

/** Starts the gate for one process (its sockets are listening when this returns) and says how to reach it from inside. */
export function openFilteredProcess(request: FilteredRequest): FilteredProcess {
  const fromBackend = request.backend ? endpointAccess(request.backend.backend, request.backend.endpoints) : { rules: [], tunnels: [] };
  const rules = [...request.rules, ...fromBackend.rules];
  const dir = socketDir(request.scratch);
  const gate = new EgressGate({
    dir,
    role: request.role,
    label: request.label,
    decide: (host, port) => matchHost(rules, host, port),
    checkResolved,
    ruleWords,
    tunnels: fromBackend.tunnels,
    log: request.log,
  });
  const proxy = `http://127.0.0.1:${gate.proxyPort}`;
  const forward = gate.forwardSpec();
  const env: Record<string, string> = proxyEnvironment(proxy);
  const forwarders: ModelForwarder[] = [];
  const keys: KeyRecord[] = [];
  const leadingArgs: string[] = [];
  for (const [i, { route, key }] of (request.backend?.keys ?? []).entries()) {
    const backend = request.backend!.backend;
    if (!isHttpUrl(route.upstream)) {
      keys.push({
        backend,
        variable: route.variable,
        held: "with_agent",
        detail: `its base URL is not an http(s) URL: ${route.upstream.slice(0, 100)}`,
      });
      continue;
    }
    const port = freePort(forward.map((entry) => entry.listen));
    const placeholder = keyPlaceholder();
    const forwarder = new ModelForwarder({
      socket: join(dir, `k${i}.sock`),
      route,
      realKey: key,
      placeholder,
      role: request.role,
      label: request.label,
      rule: `${backend}: ${route.variable}, added by handoff's model forwarder`,
      log: request.log,
    });
    forwarders.push(forwarder);
    forward.push({ listen: port, socket: join(dir, `k${i}.sock`) });
    env[route.variable] = placeholder;
    const inside = forwarder.insideBaseUrl(port);
    if (route.redirect.kind === "variable") env[route.redirect.variable] = inside;
    else leadingArgs.push(...route.redirect.args.map((arg) => arg.replaceAll(BASE_URL_TOKEN, JSON.stringify(inside))));
    keys.push({ backend, variable: route.variable, held: "forwarded", detail: `added on the way to ${new URL(route.upstream).origin}` });
  }
  return {
    gate,
    forwarders,
    keys,
    leadingArgs,
    readOnly: [dir],
    inside: sandboxEntry(forward, "socat", request.ready ?? null),
    env,
  };
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
}

/** A port of the sandbox's loopback that nothing else of this process listens on. */
function freePort(taken: readonly number[]): number {
  let port = 41_000;
  while (taken.includes(port)) port++;
  return port;
}

/** A Unix socket's path holds 107 bytes: the run's scratch space when its path is short enough, else the temp dir. */
function socketDir(scratch: string): string {
  const room = 107 - "/t99.sock".length - "egress-XXXXXX/".length;
  return mkdtempSync(join(scratch.length > 0 && scratch.length <= room ? scratch : tmpdir(), "egress-"));
}

/**
 * The variables the usual clients read for a proxy: curl, git, npm, pip, cargo, go, reqwest (Codex), bun and Claude
 * Code; Node's own fetch from Node 24 with NODE_USE_ENV_PROXY. The sandbox's own loopback stays direct: a local
 * model endpoint is tunnelled there, and a test server the agent starts is its own.
 */
export function proxyEnvironment(proxy: string): Record<string, string> {
  const direct = "localhost,127.0.0.1,::1";
  return {
    HTTP_PROXY: proxy,
    HTTPS_PROXY: proxy,
    http_proxy: proxy,
    https_proxy: proxy,
    NO_PROXY: direct,
    no_proxy: direct,
    NODE_USE_ENV_PROXY: "1",
  };
}
