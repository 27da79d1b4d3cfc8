export * from "./gen/stint/v1/types_pb.js";
export * from "./gen/stint/v1/jobs_pb.js";
export * from "./gen/stint/v1/runs_pb.js";
export * from "./gen/stint/v1/steps_pb.js";
export * from "./gen/stint/v1/worker_pb.js";
export * from "./gen/stint/v1/admin_pb.js";
