import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { AllowRule } from "../egress/allow-rules.js";
import { packageRoot } from "../lib/package-root.js";
import { checkResolved, matchHost } from "../egress/host-match.js";
import { ruleWords } from "../egress/rule-words.js";
import { EgressGate } from "../egress/egress-gate.js";
import type { EgressLog } from "../egress/egress-log.js";
import type { EgressRole } from "../egress/egress-record.js";
import { type ModelEndpoint, endpointAccess } from "../egress/model-endpoints.js";

export type { NetworkAccess } from "../egress/egress-policy.js";

/** The backend's own hosts for one agent process: its model API, its login, a base URL its config names. */
export interface BackendNetwork {
  readonly backend: string;
  readonly endpoints: readonly ModelEndpoint[];
}

/**
 * The in-sandbox forwarder (the sandbox's entry for a filtered process) and the node that runs it. Plain JavaScript
 * beside the package's bin/, not compiled: it runs alone inside the sandbox, from src/ (the tests) as from dist/.
 */
export const FORWARDER = {
  node: process.execPath,
  script: join(packageRoot() ?? join(dirname(fileURLToPath(import.meta.url)), "..", "..", ".."), "sandbox", "forwarder.mjs"),
} as const;

/** What a filtered process adds to its sandbox: the gate outside, the binds and entry inside, the proxy variables. */
export interface FilteredProcess {
  readonly gate: EgressGate;
  /** Read-only inside: the gate's socket directory, and the forwarder with its node. */
  readonly readOnly: readonly string[];
  readonly programs: readonly string[];
  /** Put before the command inside the sandbox: node, the forwarder, its spec. */
  readonly entry: readonly string[];
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
  return {
    gate,
    readOnly: [dir],
    programs: [FORWARDER.node, FORWARDER.script],
    entry: [FORWARDER.node, FORWARDER.script, JSON.stringify(gate.forwardSpec()), "--"],
    env: proxyEnvironment(proxy),
  };
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
