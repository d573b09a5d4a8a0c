// `node --import ./test/helpers/trace-loads.mjs …`: prints `LOAD <url>` on stderr for every module of handoff's dist/
// the process loads, so that a test can say what a command loads (test/startup.test.ts).
import { register } from "node:module";

const hooks = `
export async function load(url, context, nextLoad) {
  if (url.includes("/dist/")) process.stderr.write("LOAD " + url + "\\n");
  return nextLoad(url, context);
}`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`);
