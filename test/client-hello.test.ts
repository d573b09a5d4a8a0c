import { type AddressInfo, createServer } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { describe, expect, test } from "vitest";
import { CLIENT_HELLO_MAX_BYTES, serverNameOf } from "../src/egress/client-hello.js";

/** The first bytes a real TLS client sends (node's own tls.connect), caught by a plain TCP server. */
async function realClientHello(servername: string | undefined): Promise<Buffer> {
  let resolveHello: (bytes: Buffer) => void = () => {};
  const caught = new Promise<Buffer>((resolve) => {
    resolveHello = resolve;
  });
  const server = createServer((socket) => {
    socket.once("data", (chunk) => {
      resolveHello(chunk);
      socket.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const client = tlsConnect({ host: "127.0.0.1", port, servername, rejectUnauthorized: false });
  client.on("error", () => {});
  const hello = await caught;
  client.destroy();
  server.close();
  return hello;
}

describe("the server name a TLS ClientHello asks for", () => {
  test("node's own ClientHello names its servername", async () => {
    expect(serverNameOf(await realClientHello("api.example.com"))).toEqual({ kind: "sni", name: "api.example.com" });
  });

  test("a ClientHello without a server name (an IP literal) is no_sni", async () => {
    // node sends no SNI for an IP address (RFC 6066 forbids literals there).
    expect(serverNameOf(await realClientHello(undefined))).toEqual({ kind: "no_sni" });
  });

  test("every cut of a real ClientHello short of its end is incomplete, never a wrong answer or a throw", async () => {
    const hello = await realClientHello("registry.npmjs.org");
    for (let cut = 1; cut < hello.length; cut++) expect(serverNameOf(hello.subarray(0, cut))).toEqual({ kind: "incomplete" });
    expect(serverNameOf(hello)).toEqual({ kind: "sni", name: "registry.npmjs.org" });
  });

  test("a hello split over two TLS records is joined", async () => {
    const hello = await realClientHello("split.example.com");
    const body = hello.subarray(5);
    const half = Math.floor(body.length / 2);
    const record = (payload: Buffer) =>
      Buffer.concat([Buffer.from([0x16, 0x03, 0x01, payload.length >> 8, payload.length & 255]), payload]);
    const split = Buffer.concat([record(body.subarray(0, half)), record(body.subarray(half))]);
    expect(serverNameOf(split)).toEqual({ kind: "sni", name: "split.example.com" });
    expect(serverNameOf(split.subarray(0, split.length - 1))).toEqual({ kind: "incomplete" });
  });

  test("plain text and other protocols are not TLS", () => {
    expect(serverNameOf(Buffer.from("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))).toEqual({ kind: "not_tls" });
    expect(serverNameOf(Buffer.from("SSH-2.0-OpenSSH_9.2\r\n"))).toEqual({ kind: "not_tls" });
    expect(serverNameOf(Buffer.alloc(0))).toEqual({ kind: "incomplete" });
  });

  test("a record that lies about its lengths is not TLS, and nothing is read past the buffer", async () => {
    const hello = Buffer.from(await realClientHello("lies.example.com"));
    const lying = Buffer.from(hello);
    // The extensions' length made larger than what is there.
    lying.writeUInt16BE(
      0xffff,
      5 + 4 + 2 + 32 + 1 + hello[5 + 4 + 2 + 32]! + 2 + hello.readUInt16BE(5 + 4 + 2 + 32 + 1 + hello[5 + 4 + 2 + 32]!),
    );
    expect(["not_tls", "incomplete", "no_sni"]).toContain(serverNameOf(lying).kind);
    for (let seed = 0; seed < 2000; seed++) {
      const noisy = Buffer.from(hello);
      const at = 5 + ((seed * 7919) % (noisy.length - 5));
      noisy[at] = (noisy[at]! + 1 + (seed % 255)) & 255;
      expect(() => serverNameOf(noisy)).not.toThrow();
    }
    const handshakeHeader = Buffer.from([0x16, 0x03, 0x01, 0x40, 0x00, 0x01, 0xff, 0xff, 0xff]);
    expect(serverNameOf(handshakeHeader)).toEqual({ kind: "not_tls" });
  });

  test("waiting stops at the bound: bytes that never make a whole hello are not TLS", () => {
    const endless = Buffer.concat(
      Array.from({ length: Math.ceil(CLIENT_HELLO_MAX_BYTES / 16_389) + 1 }, () =>
        Buffer.concat([Buffer.from([0x16, 0x03, 0x01, 0x40, 0x00]), Buffer.alloc(16_384, 0x01)]),
      ),
    );
    expect(serverNameOf(endless)).toEqual({ kind: "not_tls" });
  });
});
