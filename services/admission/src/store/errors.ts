/** Thrown by a store when a row an operator names does not exist. */
export class NotFound extends Error {}
/** Thrown when an operator asks for a transition the current state does not allow. */
export class Conflict extends Error {}
