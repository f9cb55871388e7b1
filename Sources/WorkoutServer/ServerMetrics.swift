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
    let batchCommit: Metrics.Timer

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
        batchCommit = Metrics.Timer(label: "workout_live_batch_commit_seconds", factory: factory)
    }
}

/// Turns every error into a JSON error response (typed ones as they are, the router's own 404/405/413 in the
/// same shape, anything else a 500 that is logged) and counts requests by outcome.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: ServerMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        metrics.requests.increment()
        do {
            // The store threads' fairness key: the token until `principal` knows its athlete or team.
            let requester = Offload.Requester(request.headers[.authorization] ?? "")
            let response = try await Offload.$requester.withValue(requester) { try await next(request, context) }
            if response.status.code >= 400 { metrics.clientErrors.increment() }
            return response
        } catch let error as APIError {
            if error.statusCode >= 500 { metrics.serverErrors.increment() } else { metrics.clientErrors.increment() }
            return try error.response(from: request, context: context)
        } catch let error as StoreError {
            // A store call a handler did not map: the database did not answer (never a bare 500).
            metrics.serverErrors.increment()
            return try Parsing.storeError(error).response(from: request, context: context)
        } catch let error as any HTTPResponseError {
            metrics.clientErrors.increment()
            let status = error.status
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
            return try APIError(status: status.code, code: code, message: message).response(
                from: request, context: context)
        } catch {
            metrics.serverErrors.increment()
            context.logger.error("unexpected error: \(error)")
            return try APIError.internalError("the server failed unexpectedly; the error is in its log").response(
                from: request, context: context)
        }
    }
}
