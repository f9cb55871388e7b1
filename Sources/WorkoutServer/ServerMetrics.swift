import Foundation
import Hummingbird
import Metrics
import Prometheus
import WorkoutStore

/// The server's counters and timers (swift-metrics), exported in Prometheus' text format at `/metrics`.
///
/// The registry is the server's own (not the process-wide `MetricsSystem`), so that several servers in one
/// process (tests) keep their figures apart.
struct ServerMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    let requests: Metrics.Counter
    let clientErrors: Metrics.Counter
    let serverErrors: Metrics.Counter
    let uploads: Metrics.Counter
    let refusedUploads: Metrics.Counter
    let refusedBodies: Metrics.Counter
    let batches: Metrics.Counter
    let refusedBatches: Metrics.Counter
    let sessionsOpened: Metrics.Counter
    /// Live sessions refused because their athlete had `maxOpenSessionsPerAthlete` open (429).
    let sessionsOverLimit: Metrics.Counter
    /// Idle live sessions released from memory (journal kept).
    let idleSessionsReleased: Metrics.Counter
    /// Live sessions whose journal recovery refused as damaged (500 `journal_damaged`), each counted once.
    let damagedJournals: Metrics.Counter
    let batchCommit: Metrics.Timer
    let connections: Connections

    /// The connection gate's counters: connections admitted (`workout_connections_admitted_total`), idle ones
    /// closed to make room for a new one (`..._evicted_total`) and new ones closed at once because every open
    /// connection had a request in progress (`..._refused_total`).
    struct Connections: Sendable {
        let admitted: Metrics.Counter
        let evicted: Metrics.Counter
        let refused: Metrics.Counter
    }

    init() {
        let factory = PrometheusMetricsFactory(registry: registry)
        requests = Metrics.Counter(label: "workout_http_requests_total", factory: factory)
        clientErrors = Metrics.Counter(label: "workout_http_client_errors_total", factory: factory)
        serverErrors = Metrics.Counter(label: "workout_http_server_errors_total", factory: factory)
        uploads = Metrics.Counter(label: "workout_uploads_total", factory: factory)
        refusedUploads = Metrics.Counter(label: "workout_uploads_refused_total", factory: factory)
        refusedBodies = Metrics.Counter(label: "workout_bodies_too_large_total", factory: factory)
        batches = Metrics.Counter(label: "workout_live_batches_total", factory: factory)
        refusedBatches = Metrics.Counter(label: "workout_live_batches_refused_total", factory: factory)
        sessionsOpened = Metrics.Counter(label: "workout_live_sessions_opened_total", factory: factory)
        sessionsOverLimit = Metrics.Counter(label: "workout_live_sessions_over_limit_total", factory: factory)
        idleSessionsReleased = Metrics.Counter(label: "workout_live_sessions_idle_released_total", factory: factory)
        damagedJournals = Metrics.Counter(label: "workout_live_journals_damaged_total", factory: factory)
        batchCommit = Metrics.Timer(label: "workout_live_batch_commit_seconds", factory: factory)
        connections = Connections(
            admitted: Metrics.Counter(label: "workout_connections_admitted_total", factory: factory),
            evicted: Metrics.Counter(label: "workout_connections_evicted_total", factory: factory),
            refused: Metrics.Counter(label: "workout_connections_refused_total", factory: factory))
    }
}

/// Turns every error into a JSON error response (typed ones as they are, the router's own 404/413 in the same
/// shape, a path served under other methods a 405 with `Allow`, anything else a 500), counts requests by outcome,
/// and gives every answer the request's id (`X-Request-Id`; in error bodies `requestId`).
///
/// Every error is logged with the request id (the logger's `hb.request.id`) and its inside detail: 5xx at error
/// level, 4xx at debug. The body never carries the detail (SQL, file paths, database URLs).
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: ServerMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        metrics.requests.increment()
        let failure: APIError
        do {
            // The store threads' fairness key: the token until `principal` knows its athlete or team.
            let requester = Offload.Requester(request.headers[.authorization] ?? "")
            var response = try await Offload.$requester.withValue(requester) { try await next(request, context) }
            if response.status.code >= 400 { metrics.clientErrors.increment() }
            response.headers[.requestID] = context.id
            return response
        } catch {
            failure = Self.apiError(error, request: request)
        }
        if failure.code == "journal_damaged", !failure.repeated { metrics.damagedJournals.increment() }
        if failure.statusCode >= 500, failure.repeated {
            metrics.serverErrors.increment()
            context.logger.debug(
                "request failed again: \(failure)", metadata: ["method": "\(request.method)", "path": "\(request.uri.path.prefix(128))"])
        } else if failure.statusCode >= 500 {
            metrics.serverErrors.increment()
            context.logger.error(
                "request failed: \(failure)", metadata: ["method": "\(request.method)", "path": "\(request.uri.path.prefix(128))"])
        } else {
            metrics.clientErrors.increment()
            context.logger.debug(
                "request refused: \(failure)", metadata: ["method": "\(request.method)", "path": "\(request.uri.path.prefix(128))"])
        }
        return try failure.response(from: request, context: context)
    }

    /// The typed error an error thrown by a handler or the router answers as.
    static func apiError(_ error: any Error, request: Request) -> APIError {
        if let error = error as? APIError { return error }
        // The request's task was cancelled: its client hung up (`HangUpHandler`) or the server stops.
        if error is CancellationError { return .cancelled }
        // A store call a handler did not map: the database did not answer (never a bare 500).
        if let error = error as? StoreError { return Parsing.storeError(error) }
        guard let error = error as? any HTTPResponseError else {
            return .internalError("the server failed unexpectedly; give the request id to its operator", detail: "\(error)")
        }
        let status = error.status
        if status.code == 404, let allowed = Routes.methods(for: request.uri.path), !allowed.isEmpty {
            let allow = allowed.joined(separator: ", ")
            return APIError(
                status: 405, code: "method_not_allowed",
                message: "\(request.method) is not served at \(request.uri.path.prefix(128)); use \(allow)",
                details: ["allow": allow])
        }
        let code =
            switch status.code {
            case 404: "not_found"
            case 405: "method_not_allowed"
            case 413: "body_too_large"
            default: "http_\(status.code)"
            }
        let message =
            status.code == 404
            ? "no such endpoint: \(request.method) \(request.uri.path.prefix(128)); see docs/openapi.yaml"
            : status.reasonPhrase
        return APIError(status: status.code, code: code, message: message, detail: "\(error)")
    }
}

/// The server's paths and the methods each is served with (the router's table, for 405 answers).
enum Routes {
    /// Path patterns (`*` one segment) and their methods, as `WorkoutServer.makeRouter` registers them.
    static let table: [(pattern: [Substring], methods: [String])] = [
        ("/health", ["GET"]), ("/ready", ["GET"]), ("/metrics", ["GET"]), ("/v1/me", ["GET"]),
        ("/v1/workouts", ["GET", "POST"]), ("/v1/workouts/*", ["DELETE", "GET"]), ("/v1/workouts/*/report", ["GET"]),
        ("/v1/samples", ["GET"]), ("/v1/sessions/*", ["GET", "PUT"]), ("/v1/sessions/*/batches", ["POST"]),
        ("/v1/sessions/*/finish", ["POST"]),
    ].map { ($0.0.split(separator: "/"), $0.1) }

    /// The methods `path` is served with; nil when no route has that path.
    static func methods(for path: String) -> [String]? {
        let segments = path.split(separator: "/")
        for (pattern, methods) in table where pattern.count == segments.count {
            if zip(pattern, segments).allSatisfy({ $0 == "*" || $0 == $1 }) { return methods }
        }
        return nil
    }
}
