import { readFileSync, readdirSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, test } from "vitest";

const ROOT = resolve(import.meta.dirname, "..");

/** Every product file (src/ and backends/) and the handoff files it imports, type-only imports included. */
function importGraph(): Map<string, string[]> {
  const files = ["src", "backends"].flatMap((top) =>
    readdirSync(join(ROOT, top), { recursive: true, encoding: "utf8" })
      .filter((name) => name.endsWith(".ts"))
      .map((name) => join(top, name)),
  );
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(join(ROOT, file), "utf8");
    const targets = [...text.matchAll(/^(?:import|export)\s[^;]*?from\s+"(\.[^"]+)"|import\("(\.[^"]+)"\)/gms)]
      .map((match) => relative(ROOT, resolve(ROOT, dirname(file), match[1] ?? match[2]!)).replace(/\.js$/, ".ts"))
      .filter((target) => known.has(target));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** The import circles: strongly connected components of more than one file (Tarjan). */
function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (file: string) => {
    index.set(file, next);
    low.set(file, next++);
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (onStack.has(target)) low.set(file, Math.min(low.get(file)!, index.get(target)!));
    }
    if (low.get(file) === index.get(file)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== file);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

/** The arrows out of `folder` (its subfolders included) that go anywhere but the folders named. */
function arrowsOut(graph: Map<string, string[]>, folder: string, allowed: readonly string[]): string[] {
  const inside = (file: string, dir: string) => file.startsWith(`${dir}/`);
  return [...graph]
    .filter(([file]) => inside(file, folder))
    .flatMap(([file, targets]) =>
      targets.filter((target) => ![folder, ...allowed].some((dir) => inside(target, dir))).map((target) => `${file} → ${target}`),
    );
}

describe("the import graph of src/ and backends/", () => {
  const graph = importGraph();

  test("has no import circle, type-only imports included", () => {
    expect(graph.size).toBeGreaterThan(200);
    expect(circles(graph)).toEqual([]);
  });

  test("the floor imports nothing above it: src/lib nothing of handoff's, src/vocabulary only src/lib, src/process only those two", () => {
    expect(arrowsOut(graph, "src/lib", [])).toEqual([]);
    expect(arrowsOut(graph, "src/vocabulary", ["src/lib"])).toEqual([]);
    expect(arrowsOut(graph, "src/process", ["src/lib", "src/vocabulary"])).toEqual([]);
  });

  test("src/process/process.ts is the one module that starts processes: nothing else in src/ or backends/ imports node:child_process", () => {
    const starters = [...graph.keys()].filter((file) => /from\s+"node:child_process"/.test(readFileSync(join(ROOT, file), "utf8")));
    expect(starters).toEqual(["src/process/process.ts"]);
  });

  test("backends implement the agent's contract: src/agent never imports backends/", () => {
    const intoBackends = [...graph]
      .filter(([file]) => file.startsWith("src/agent/"))
      .flatMap(([file, targets]) => targets.filter((target) => target.startsWith("backends/")).map((target) => `${file} → ${target}`));
    expect(intoBackends).toEqual([]);
  });
});
