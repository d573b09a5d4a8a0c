import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A test CA made with openssl, and a certificate for `host` it signed (PEM text); nothing is left on disk. */
export function testCertificates(host: string): { ca: string; key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), "handoff-test-ca-"));
  try {
    const run = (args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
    run([
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      "ca.key",
      "-out",
      "ca.pem",
      "-days",
      "2",
      "-subj",
      "/CN=handoff test CA",
    ]);
    run(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", `/CN=${host}`]);
    writeFileSync(join(dir, "ext.cnf"), `subjectAltName=DNS:${host}\n`);
    run([
      "x509",
      "-req",
      "-in",
      "server.csr",
      "-CA",
      "ca.pem",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-out",
      "server.pem",
      "-days",
      "2",
      "-extfile",
      "ext.cnf",
    ]);
    const read = (name: string) => readFileSync(join(dir, name), "utf8");
    return { ca: read("ca.pem"), key: read("server.key"), cert: read("server.pem") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
