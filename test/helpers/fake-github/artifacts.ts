import { randomUUID } from "node:crypto";
import { inflateRawSync } from "node:zlib";
import type { FakeGitHub, RecordedRequest, Route, RouteReply } from "./server.js";

/**
 * The Actions artifact service on the stand-in (server.ts), as @actions/artifact v6 uses it: the results service's
 * twirp JSON API (`/twirp/github.actions.results.api.v1.ArtifactService/<method>`, bearer $ACTIONS_RUNTIME_TOKEN) and
 * the signed blob URLs it hands out, where the zip is PUT as Azure block-blob blocks and a block list, and read back
 * with a GET. A finalized artifact stays for the life of the server, so a later job (another process) downloads it.
 */

const TWIRP = "/twirp/github.actions.results.api.v1.ArtifactService/";
const BLOBS = "/artifact-blobs/";

export interface StoredArtifact {
  readonly id: number;
  readonly name: string;
  readonly workflowRunBackendId: string;
  readonly workflowJobRunBackendId: string;
  /** The blob as committed (the zip); empty until the block list is committed. */
  zip: Buffer;
  /** `sha256:<hex>` as FinalizeArtifact sent it. */
  digest: string | null;
  finalized: boolean;
  readonly createdAt: string;
}

export interface FakeArtifactService {
  /** Add it to startFakeGitHub. */
  readonly route: Route;
  /** Every artifact created, finalized or not, in creation order. */
  readonly artifacts: StoredArtifact[];
}

/**
 * $ACTIONS_RUNTIME_TOKEN as the runner gives it: a JWT whose `scp` claim names the workflow run and job
 * (`Actions.Results:<run>:<job>`). The client only decodes it; the stand-in checks it is the one it was given.
 */
export function runtimeToken(workflowRunBackendId: string, workflowJobRunBackendId: string): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const scp = `Actions.GenericRead:00000000-0000-0000-0000-000000000000 Actions.Results:${workflowRunBackendId}:${workflowJobRunBackendId}`;
  return `${part({ alg: "RS256", typ: "JWT" })}.${part({ scp, exp: Math.floor(Date.now() / 1000) + 3600 })}.c2lnbmF0dXJl`;
}

function scopeOf(request: RecordedRequest): { run: string; job: string } | null {
  const auth = request.headers.authorization ?? "";
  const token = /^Bearer (.+)$/.exec(auth)?.[1];
  const payload = token?.split(".")[1];
  if (!payload) return null;
  try {
    const scp = String((JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as { scp?: unknown }).scp ?? "");
    const results = scp.split(" ").find((scope) => scope.startsWith("Actions.Results:"));
    const [, run, job] = results?.split(":") ?? [];
    return run && job ? { run, job } : null;
  } catch {
    return null;
  }
}

const twirpError = (status: number, code: string, msg: string): RouteReply => ({ status, json: { code, msg } });

export function fakeArtifactService(): FakeArtifactService {
  const artifacts: StoredArtifact[] = [];
  /** Uncommitted blocks per blob key (the artifact's id), by block id. */
  const blocks = new Map<number, Map<string, Buffer>>();

  const monolith = (a: StoredArtifact) => ({
    workflow_run_backend_id: a.workflowRunBackendId,
    workflow_job_run_backend_id: a.workflowJobRunBackendId,
    database_id: String(a.id),
    name: a.name,
    size: String(a.zip.length),
    created_at: a.createdAt,
    ...(a.digest ? { digest: a.digest } : {}),
  });

  function twirp(method: string, request: RecordedRequest, server: FakeGitHub): RouteReply {
    const scope = scopeOf(request);
    if (!scope) return twirpError(401, "unauthenticated", "no valid runtime token");
    const body = (request.json ?? {}) as Record<string, unknown>;
    if (body.workflow_run_backend_id !== scope.run) return twirpError(403, "permission_denied", "the token is for another workflow run");
    const signed = (a: StoredArtifact) => `${server.url}${BLOBS}${a.id}/${encodeURIComponent(a.name)}.zip?sig=fake-signature&se=2099-01-01`;
    const ofRun = artifacts.filter((a) => a.workflowRunBackendId === scope.run);
    switch (method) {
      case "CreateArtifact": {
        const name = String(body.name ?? "");
        if (ofRun.some((a) => a.name === name && a.finalized))
          return twirpError(409, "already_exists", `an artifact with this name already exists on the workflow run`);
        const artifact: StoredArtifact = {
          id: artifacts.length + 1,
          name,
          workflowRunBackendId: scope.run,
          workflowJobRunBackendId: scope.job,
          zip: Buffer.alloc(0),
          digest: null,
          finalized: false,
          createdAt: new Date().toISOString(),
        };
        artifacts.push(artifact);
        return { status: 200, json: { ok: true, signed_upload_url: signed(artifact) } };
      }
      case "FinalizeArtifact": {
        const artifact = ofRun.filter((a) => a.name === body.name && !a.finalized).at(-1);
        if (!artifact) return twirpError(404, "not_found", "no artifact to finalize");
        if (String(body.size) !== String(artifact.zip.length))
          return twirpError(400, "invalid_argument", `size ${body.size} is not the ${artifact.zip.length} bytes uploaded`);
        artifact.finalized = true;
        artifact.digest = typeof body.hash === "string" ? body.hash : null;
        return { status: 200, json: { ok: true, artifact_id: String(artifact.id) } };
      }
      case "ListArtifacts": {
        const found = ofRun.filter(
          (a) =>
            a.finalized &&
            (body.name_filter === undefined || a.name === body.name_filter) &&
            (body.id_filter === undefined || String(a.id) === String(body.id_filter)),
        );
        return { status: 200, json: { artifacts: found.map(monolith) } };
      }
      case "GetSignedArtifactURL": {
        const artifact = ofRun.find((a) => a.finalized && a.name === body.name);
        if (!artifact) return twirpError(404, "not_found", "artifact not found");
        return { status: 200, json: { signed_url: signed(artifact) } };
      }
      default:
        return twirpError(404, "bad_route", `no method ${method}`);
    }
  }

  /** Azure block blob: PUT ?comp=block&blockid=…, PUT ?comp=blocklist (XML), or one PUT of the whole blob; GET reads it. */
  function blob(request: RecordedRequest, url: URL): RouteReply {
    const id = Number(url.pathname.slice(BLOBS.length).split("/")[0]);
    const artifact = artifacts.find((a) => a.id === id);
    if (!artifact || url.searchParams.get("sig") !== "fake-signature") return { status: 403, body: "AuthenticationFailed" };
    const headers = {
      etag: `"0x${id}"`,
      "last-modified": new Date().toUTCString(),
      "x-ms-request-id": randomUUID(),
      "x-ms-version": "2025-01-05",
    };
    if (request.method === "GET") {
      if (!artifact.finalized) return { status: 404, body: "BlobNotFound" };
      return { status: 200, body: artifact.zip, headers: { ...headers, "content-type": "application/zip" } };
    }
    if (request.method !== "PUT") return { status: 405, body: "" };
    if (artifact.finalized) return { status: 409, body: "the artifact is finalized" };
    const comp = url.searchParams.get("comp");
    if (comp === "block") {
      const blockId = url.searchParams.get("blockid") ?? "";
      if (!blocks.has(id)) blocks.set(id, new Map());
      blocks.get(id)!.set(blockId, request.body);
      return { status: 201, body: "", headers };
    }
    if (comp === "blocklist") {
      const staged = blocks.get(id) ?? new Map<string, Buffer>();
      const ids = [...request.body.toString("utf8").matchAll(/<(?:Latest|Uncommitted|Committed)>([^<]*)<\//g)].map((m) => m[1]!);
      const missing = ids.filter((blockId) => !staged.has(blockId));
      if (missing.length > 0) return { status: 400, body: "InvalidBlockList" };
      artifact.zip = Buffer.concat(ids.map((blockId) => staged.get(blockId)!));
      blocks.delete(id);
      return { status: 201, body: "", headers };
    }
    if (comp === null) {
      artifact.zip = request.body;
      return { status: 201, body: "", headers };
    }
    return { status: 400, body: `unknown comp=${comp}` };
  }

  const route: Route = (request, url, server) => {
    if (url.pathname.startsWith(TWIRP) && request.method === "POST") return twirp(url.pathname.slice(TWIRP.length), request, server);
    if (url.pathname.startsWith(BLOBS)) return blob(request, url);
    return undefined;
  };
  return { route, artifacts };
}

/** The files in a zip (the artifact as uploaded), by name: read from its central directory, deflate or stored. */
export function unzipEntries(zip: Buffer): Map<string, Buffer> {
  const entries = new Map<string, Buffer>();
  const end = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (end < 0) throw new Error("not a zip: no end of central directory");
  const count = zip.readUInt16LE(end + 10);
  let at = zip.readUInt32LE(end + 16);
  for (let i = 0; i < count; i++) {
    if (zip.readUInt32LE(at) !== 0x02014b50) throw new Error(`bad central directory header at ${at}`);
    const method = zip.readUInt16LE(at + 10);
    const compressedSize = zip.readUInt32LE(at + 20);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    const localAt = zip.readUInt32LE(at + 42);
    const name = zip.subarray(at + 46, at + 46 + nameLength).toString("utf8");
    const dataAt = localAt + 30 + zip.readUInt16LE(localAt + 26) + zip.readUInt16LE(localAt + 28);
    const data = zip.subarray(dataAt, dataAt + compressedSize);
    if (!name.endsWith("/")) entries.set(name, method === 8 ? inflateRawSync(data) : Buffer.from(data));
    at += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}
