export type { RecordedRequest, ScriptedModel, ScriptedModelOptions } from "./server.js";
export { startScriptedModel } from "./server.js";
export type { ModelScript, ScriptStep } from "./script.js";
export { modelScriptSchema, parseModelScript } from "./script.js";
