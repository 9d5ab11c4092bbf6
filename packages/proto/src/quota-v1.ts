// Every file of the protobuf package dnc.quota.v1, as one namespace.
export * from './gen/dnc/quota/v1/organization_pb.js';
export * from './gen/dnc/quota/v1/quota_pb.js';
