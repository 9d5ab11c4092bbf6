// Generated contracts (protoc-gen-es v2) from protos/. Regenerate with `npm run generate`.
export * as admissionv1 from './gen/dnc/admission/v1/admission_pb.js';
export * as jobsv1 from './gen/dnc/jobs/v1/jobs_pb.js';
export * as platformv1 from './gen/dnc/platform/v1/platform_pb.js';
export * as quotav1 from './gen/dnc/quota/v1/quota_pb.js';
export * as registryv1 from './gen/dnc/registry/v1/registry_adapter_pb.js';
export * as healthv1 from './gen/grpc/health/v1/health_pb.js';
