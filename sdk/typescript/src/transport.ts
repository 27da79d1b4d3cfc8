import type { Interceptor, Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";

/** ConnectOptions say where the server is and who is calling. */
export interface ConnectOptions {
  /** The server's base URL, such as http://127.0.0.1:7777. */
  url: string;
  /** The bearer token's secret (`stint tokens create`); omit for a server run with --no-auth. */
  token?: string;
  /** "2" (the default: one multiplexed connection, h2c without TLS) or "1.1". */
  httpVersion?: "1.1" | "2";
  /**
   * Accept gzip- and brotli-compressed responses. Off by default: a worker's
   * messages are small and usually cross a fast network, where compressing
   * them costs both sides more CPU than it saves (the Python SDK does not
   * compress either).
   */
  compression?: boolean;
  /** A transport of your own (tests, proxies); url, token and httpVersion are then ignored. */
  transport?: Transport;
}

/** transportOf builds the Connect transport (binary protobuf) with the bearer token. */
export function transportOf(opts: ConnectOptions): Transport {
  if (opts.transport) return opts.transport;
  if (!/^https?:\/\//.test(opts.url ?? "")) {
    throw new TypeError(`stint: url ${JSON.stringify(opts.url)}: expected http://HOST:PORT or https://HOST:PORT`);
  }
  const interceptors: Interceptor[] = [];
  if (opts.token) {
    const auth = `Bearer ${opts.token}`;
    interceptors.push((next) => (req) => {
      req.header.set("Authorization", auth);
      return next(req);
    });
  }
  return createConnectTransport({
    baseUrl: opts.url.replace(/\/+$/, ""),
    httpVersion: opts.httpVersion ?? "2",
    useBinaryFormat: true,
    interceptors,
    ...(opts.compression ? {} : { acceptCompression: [] }),
  });
}
