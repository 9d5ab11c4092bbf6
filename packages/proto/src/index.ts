// Generated contracts (protoc-gen-es v2) from protos/. Regenerate with `npm run generate`.
// A protobuf package of several files is one namespace (admission-v1.ts, quota-v1.ts, jobs-v1.ts).
export * as admissionv1 from './admission-v1.js';
export * as dashboardv1 from './gen/dnc/dashboard/v1/dashboard_pb.js';
export * as platformv1 from './gen/dnc/platform/v1/platform_pb.js';
export * as registryv1 from './gen/dnc/registry/v1/registry_adapter_pb.js';
export * as healthv1 from './gen/grpc/health/v1/health_pb.js';
export * as jobsv1 from './jobs-v1.js';
export * as quotav1 from './quota-v1.js';
