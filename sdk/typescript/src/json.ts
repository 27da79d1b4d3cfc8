import { create, fromJson, toJson, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { durationFromMs, type Duration, NullValue, type Value, ValueSchema } from "@bufbuild/protobuf/wkt";
import { type Job, type JobJson, JobSchema } from "./gen/stint/v1/types_pb.js";

/** One null Value for every request that sends null (most results): requests only read it. */
const nullValue = create(ValueSchema, { kind: { case: "nullValue", value: NullValue.NULL_VALUE } });

/** valueOf turns a JSON value into a google.protobuf.Value for a request; undefined stays unset. */
export function valueOf(v: unknown): Value | undefined {
  if (v === undefined) return undefined;
  if (v === null) return nullValue;
  return fromJson(ValueSchema, JSON.parse(JSON.stringify(v)) as JsonValue);
}

/** jsonOf turns a google.protobuf.Value back into JSON; unset is undefined. */
export function jsonOf(v: Value | undefined): JsonValue | undefined {
  return v === undefined ? undefined : (toJson(ValueSchema, v) as JsonValue);
}

/** jobJson is a job in the API's JSON form (the same shape the Python SDK sees). */
export function jobJson(j: Job | undefined): JobJson {
  return j === undefined ? {} : (toJson(JobSchema, j) as JobJson);
}

/** duration turns milliseconds into a Duration; undefined stays unset. */
export function duration(ms: number | undefined): Duration | undefined {
  return ms === undefined ? undefined : durationFromMs(ms);
}

export type { JsonObject, JsonValue };
