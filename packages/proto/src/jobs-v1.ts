// Every file of the protobuf package dnc.jobs.v1, as one namespace.
export * from './gen/dnc/jobs/v1/jobs_pb.js';
export * from './gen/dnc/jobs/v1/organization_pb.js';
