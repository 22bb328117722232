/**
 * One connection to one node, over TCP or TLS, with requests pipelined: each command is
 * written at once and its reply is the next one to arrive (RESP2 answers in order).
 *
 * Every request to a node goes over its one connection, so `IDMINT.GIVEBACK` reaches the
 * connection that took the range (a node takes a run back only there).
 *
 * The socket keeps the process alive only while a request waits for its reply: an idle client
 * that was never closed does not hold a program open.
 */

import * as net from "node:net";
import * as tls from "node:tls";

import { encodeCommand, ProtocolError, ReplyError, ReplyReader, type Arg, type Reply } from "./resp.js";

/** Where a node listens. */
export interface Address {
  readonly host: string;
  readonly port: number;
  readonly tls: boolean;
  /** `host:port`, for messages and counters. */
  readonly label: string;
}

/** The connection is gone (closed by either side, or failed): the request got no answer. */
export class ConnectionLost extends Error {
  constructor(message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "ConnectionLost";
  }
}

interface Pending {
  resolve(reply: Reply): void;
  reject(error: Error): void;
}

/** An open connection. Built with {@link Connection.open}. */
export class Connection {
  private readonly socket: net.Socket;
  private readonly reader = new ReplyReader();
  private readonly pending: Pending[] = [];
  private lost: Error | undefined;
  /** Set by {@link retire}: closes the connection once its requests are answered. */
  private retiring: NodeJS.Timeout | undefined;
  /** Told when the connection is lost while it is being opened. */
  private onLost: ((error: Error) => void) | undefined;

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.setNoDelay(true);
    socket.unref();
    socket.on("data", (chunk: Buffer) => this.received(chunk));
    socket.on("error", (error) => this.fail(new ConnectionLost(error.message, error)));
    socket.on("close", () => this.fail(new ConnectionLost("the node closed the connection")));
  }

  /**
   * Connects, then sends `AUTH token` as the first command when a token is given. Rejects with
   * the AUTH reply's {@link ReplyError} when the token is refused (so the caller classifies it
   * as it classifies any reply: a wrong token is not an outage), or with
   * {@link ConnectionLost}.
   */
  static async open(
    address: Address,
    token: string | undefined,
    ca: string | Buffer | undefined,
    timeoutMs: number,
  ): Promise<Connection> {
    const socket = address.tls
      ? tls.connect({
          host: address.host,
          port: address.port,
          // SNI takes names only, never an IP address.
          ...(net.isIP(address.host) === 0 ? { servername: address.host } : {}),
          ...(ca === undefined ? {} : { ca }),
        })
      : net.connect({ host: address.host, port: address.port });
    const connection = new Connection(socket);
    // Held while it connects (a program awaiting it stays alive); bounded by `timeoutMs`.
    socket.ref();
    const timer = setTimeout(() => {
      connection.fail(new ConnectionLost(`${address.label} did not connect within ${timeoutMs} ms`));
    }, timeoutMs);
    try {
      await new Promise<void>((resolve, reject) => {
        connection.onLost = reject;
        socket.once(address.tls ? "secureConnect" : "connect", () => resolve());
      });
      if (token !== undefined) {
        const reply = await connection.call(["AUTH", token]);
        if (reply instanceof ReplyError) {
          connection.close();
          throw reply;
        }
      }
    } finally {
      clearTimeout(timer);
      connection.onLost = undefined;
      if (connection.pending.length === 0) {
        socket.unref();
      }
    }
    return connection;
  }

  /** Whether the connection can still carry new requests. */
  get usable(): boolean {
    return this.lost === undefined && this.retiring === undefined;
  }

  /**
   * Sends one command; resolves with its reply (an error reply is a {@link ReplyError} value),
   * rejects with {@link ConnectionLost} when the connection goes first.
   */
  call(args: readonly Arg[]): Promise<Reply> {
    if (this.lost !== undefined) {
      return Promise.reject(this.lost);
    }
    return new Promise<Reply>((resolve, reject) => {
      if (this.pending.length === 0) {
        this.socket.ref();
      }
      this.pending.push({ resolve, reject });
      this.socket.write(encodeCommand(args));
    });
  }

  /** Closes the connection; requests still waiting reject. */
  close(): void {
    this.fail(new ConnectionLost("the connection was closed"));
  }

  /**
   * Takes it out of use after one of its requests went wrong (no answer in time, an answer
   * of the wrong shape): no new request goes over it, and it closes once the requests already
   * on it are answered, or after `graceMs` at the latest (their callers' own bound). Closing it
   * at once would fail every other request in flight on it, and throw away the ranges the
   * node hands out to them: one slow answer under load would cost every caller's range.
   */
  retire(graceMs: number): void {
    if (this.lost !== undefined || this.retiring !== undefined) {
      return;
    }
    if (this.pending.length === 0) {
      this.close();
      return;
    }
    this.retiring = setTimeout(() => this.close(), graceMs);
    // The requests still on it hold the process (the socket is held while they wait); the
    // timer alone need not.
    this.retiring.unref();
  }

  private received(chunk: Buffer): void {
    this.reader.push(chunk);
    for (;;) {
      let reply: Reply | undefined;
      try {
        reply = this.reader.next();
      } catch (error) {
        const reason = error instanceof ProtocolError ? error.message : String(error);
        this.fail(new ConnectionLost(`unreadable reply: ${reason}`, error));
        return;
      }
      if (reply === undefined) {
        return;
      }
      const waiter = this.pending.shift();
      if (waiter === undefined) {
        this.fail(new ConnectionLost("a reply nobody asked for"));
        return;
      }
      if (this.pending.length === 0) {
        this.socket.unref();
      }
      waiter.resolve(reply);
      if (this.retiring !== undefined && this.pending.length === 0) {
        this.close();
        return;
      }
    }
  }

  private fail(error: Error): void {
    if (this.lost !== undefined) {
      return;
    }
    this.lost = error;
    clearTimeout(this.retiring);
    this.socket.destroy();
    this.onLost?.(error);
    const waiting = this.pending.splice(0);
    for (const waiter of waiting) {
      waiter.reject(error);
    }
  }
}
