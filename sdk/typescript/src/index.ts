export { Tether, type TetherOptions } from "./client.js";
export * from "./errors.js";
export type { CaptureStats, CaptureTurn } from "./capture.js";
export type { ChatContext, ChatMessage, GatewayMessage } from "./gateway.js";
export type { Args, CallOptions, Page, Pager, Result, Schemas } from "./types.js";
export { OPERATIONS, type OperationId } from "./operations.js";
