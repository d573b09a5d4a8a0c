#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
import { main } from "../dist/src/cli.js";

main(process.argv.slice(2)).then((code) => process.exit(code));
