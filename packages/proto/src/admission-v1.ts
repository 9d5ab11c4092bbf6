// Every file of the protobuf package dnc.admission.v1, as one namespace.
export * from './gen/dnc/admission/v1/admission_pb.js';
export * from './gen/dnc/admission/v1/organization_pb.js';
