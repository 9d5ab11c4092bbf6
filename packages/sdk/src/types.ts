import type { components } from './gen/openapi.js';

type Schemas = components['schemas'];

export type ScrubRequest = Schemas['ScrubRequest'];
export type DurableScrubRequest = Schemas['DurableScrubRequest'];
export type Country = ScrubRequest['country'];
/**
 * The complete result. `safe_numbers_to_call` means only "not found in the selected registry at the time of
 * the check": not consent, not reachability, not compliance with other calling rules such as calling hours.
 */
export type ScrubResult = Schemas['ScrubResult'];
export type InvalidNumber = Schemas['InvalidNumber'];
export type InvalidReason = InvalidNumber['reason'];
export type Summary = Schemas['Summary'];
export type ScrubJobAccepted = Schemas['ScrubJobAccepted'];
export type ScrubJobStatus = Schemas['ScrubJobStatus'];
export type JobStatus = ScrubJobStatus['status'];
export type JobError = Schemas['JobError'];
export type ErrorBody = Schemas['Error'];
export type ErrorCode = ErrorBody['error'];
export type { components, operations, paths } from './gen/openapi.js';
