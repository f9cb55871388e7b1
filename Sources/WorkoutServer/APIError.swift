import Foundation
import Hummingbird
import NIOCore

/// An error the server answers with: an HTTP status and a JSON body saying what went wrong and what to do.
///
/// The body is `{"error": {"code": "...", "message": "...", "requestId": "..."}}`; `code` is stable (clients
/// branch on it), `message` is for people, `requestId` is the `X-Request-Id` of the answer, which the server's
/// log line of the error carries too. Every error a client can cause is one of these, never a bare 500.
///
/// `message` never holds internals (SQL, file paths, database URLs, a driver's error): those go to `detail`,
/// which only the log gets.
struct APIError: Error, Sendable, Equatable, CustomStringConvertible {
    var statusCode: Int
    var code: String
    var message: String
    /// Extra fields for the client (the expected batch number, the existing workout).
    var details: [String: String]
    /// What went wrong inside (the store's or driver's error): logged with the request id, never sent.
    var detail: String?
    /// Seconds after which the client may try again (the `Retry-After` header of a 429 or 503), nil: none sent.
    var retryAfter: Int?
    /// An error already logged at its level once (a damaged journal asked for again): logged at debug level.
    var repeated = false

    init(
        status: Int, code: String, message: String, details: [String: String] = [:], detail: String? = nil,
        retryAfter: Int? = nil
    ) {
        self.statusCode = status
        self.code = code
        self.message = message
        self.details = details
        self.detail = detail
        self.retryAfter = retryAfter
    }

    var description: String { "\(statusCode) \(code): \(message)" + (detail.map { " [\($0)]" } ?? "") }

    static func unauthorized(_ message: String) -> APIError {
        APIError(status: 401, code: "unauthorized", message: message)
    }
    static func forbidden(_ message: String) -> APIError { APIError(status: 403, code: "forbidden", message: message) }
    static func notFound(_ message: String) -> APIError { APIError(status: 404, code: "not_found", message: message) }
    static func badRequest(_ code: String, _ message: String, detail: String? = nil) -> APIError {
        APIError(status: 400, code: code, message: message, detail: detail)
    }
    static func unprocessable(_ code: String, _ message: String) -> APIError {
        APIError(status: 422, code: code, message: message)
    }
    static func conflict(_ code: String, _ message: String, details: [String: String] = [:]) -> APIError {
        APIError(status: 409, code: code, message: message, details: details)
    }
    static func tooLarge(limit: Int) -> APIError {
        APIError(
            status: 413, code: "body_too_large",
            message: "the request body is larger than the server's limit of \(limit) bytes; "
                + "send a smaller file or raise the limit with `workout serve --body-limit`",
            details: ["limit": String(limit)])
    }
    static func tooManyRequests(_ code: String, _ message: String, details: [String: String] = [:]) -> APIError {
        APIError(status: 429, code: code, message: message, details: details)
    }
    static func internalError(_ message: String, detail: String? = nil) -> APIError {
        APIError(status: 500, code: "internal", message: message, detail: detail)
    }
    /// 503: the server cannot answer now (`detail`, the cause, is logged only).
    static func unavailable(_ message: String, detail: String? = nil) -> APIError {
        APIError(status: 503, code: "unavailable", message: message, detail: detail)
    }

    /// 500 `journal_damaged`: live session `session` cannot be read back from its journal, which recovery refuses
    /// as damaged (`DamagedJournals`); sending again does not help. `detail` is logged only.
    static func journalDamaged(session: UUID, detail: String, repeated: Bool) -> APIError {
        var error = APIError(
            status: 500, code: "journal_damaged",
            message: "session \(session) cannot be resumed: its journal on the server is damaged and was kept as it "
                + "is for the server's operator; sending again will not help. Record on in a new session (a new id)",
            detail: detail)
        error.repeated = repeated
        return error
    }

    /// 499 (nginx's "client closed request"): the request was cancelled before its answer, its client having hung
    /// up (or the server stopping); its store work was dropped or interrupted. Counted and logged as a client's.
    static let cancelled = APIError(
        status: 499, code: "request_cancelled",
        message: "the request was cancelled before it was answered (its connection closed); send it again")

    struct Body: Encodable {
        struct Inner: Encodable {
            var code: String
            var message: String
            var details: [String: String]?
            var requestId: String?
        }
        var error: Inner
    }

    /// The JSON body (`requestId`: the request's id, also in the `X-Request-Id` header).
    func json(requestID: String? = nil) -> [UInt8] {
        let body = Body(
            error: .init(code: code, message: message, details: details.isEmpty ? nil : details, requestId: requestID))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? Array(encoder.encode(body))) ?? Array(#"{"error":{"code":"internal","message":"?"}}"#.utf8)
    }
}

extension HTTPFields.Element.Name {
    /// The request's id, on every answer (and in every error body and log line of the request).
    static let requestID = HTTPFields.Element.Name("X-Request-Id")!
}

extension APIError: HTTPResponseError {
    var status: HTTPResponse.Status { HTTPResponse.Status(code: statusCode) }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8", .requestID: context.id]
        if statusCode == 405, let allow = details["allow"] { headers[.allow] = allow }
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        return Response(
            status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: json(requestID: context.id))))
    }
}
