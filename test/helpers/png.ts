import { inflateSync } from "node:zlib";

export interface Png {
  readonly width: number;
  readonly height: number;
  /** Distinct colours among the pixels (RGB or RGBA, 8 bits a channel). */
  readonly colours: number;
}

/** Decodes an 8-bit RGB or RGBA PNG (what chromium's --screenshot writes) far enough to count its colours. */
export function readPng(bytes: Buffer): Png {
  if (!bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) throw new Error("not a PNG");
  let at = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const data: Buffer[] = [];
  while (at < bytes.length) {
    const length = bytes.readUInt32BE(at);
    const type = bytes.toString("latin1", at + 4, at + 8);
    const body = bytes.subarray(at + 8, at + 8 + length);
    if (type === "IHDR") {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      const [depth, colourType] = [body[8], body[9]];
      if (depth !== 8 || (colourType !== 2 && colourType !== 6))
        throw new Error(`unsupported PNG: depth ${depth}, colour type ${colourType}`);
      channels = colourType === 2 ? 3 : 4;
    } else if (type === "IDAT") data.push(body);
    at += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(data));
  const stride = width * channels;
  const pixels = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    for (let x = 0; x < stride; x++) {
      const value = raw[y * (stride + 1) + 1 + x]!;
      const left = x >= channels ? pixels[y * stride + x - channels]! : 0;
      const up = y > 0 ? pixels[(y - 1) * stride + x]! : 0;
      const corner = x >= channels && y > 0 ? pixels[(y - 1) * stride + x - channels]! : 0;
      pixels[y * stride + x] = (value + unfilter(filter!, left, up, corner)) & 0xff;
    }
  }
  const colours = new Set<number>();
  for (let i = 0; i < pixels.length; i += channels) colours.add(pixels.readUIntBE(i, channels));
  return { width, height, colours: colours.size };
}

function unfilter(filter: number, left: number, up: number, corner: number): number {
  switch (filter) {
    case 0:
      return 0;
    case 1:
      return left;
    case 2:
      return up;
    case 3:
      return (left + up) >> 1;
    case 4: {
      const p = left + up - corner;
      const [pa, pb, pc] = [Math.abs(p - left), Math.abs(p - up), Math.abs(p - corner)];
      return pa <= pb && pa <= pc ? left : pb <= pc ? up : corner;
    }
    default:
      throw new Error(`unknown PNG filter ${filter}`);
  }
}
