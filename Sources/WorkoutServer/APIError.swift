import Foundation
import Hummingbird
import NIOCore

/// An error the server answers with: an HTTP status and a JSON body saying what went wrong and what to do.
///
/// The body is `{"error": {"code": "...", "message": "..."}}`; `code` is stable (clients branch on it),
/// `message` is for people. Every error a client can cause is one of these, never a bare 500.
struct APIError: Error, Sendable, Equatable, CustomStringConvertible {
    var statusCode: Int
    var code: String
    var message: String
    /// Extra fields for the client (the expected batch number, the existing workout).
    var details: [String: String]
    /// Seconds after which the client may try again (the `Retry-After` header of a 429 or 503), nil: none sent.
    var retryAfter: Int?

    init(status: Int, code: String, message: String, details: [String: String] = [:], retryAfter: Int? = nil) {
        self.statusCode = status
        self.code = code
        self.message = message
        self.details = details
        self.retryAfter = retryAfter
    }

    var description: String { "\(statusCode) \(code): \(message)" }

    static func unauthorized(_ message: String) -> APIError {
        APIError(status: 401, code: "unauthorized", message: message)
    }
    static func forbidden(_ message: String) -> APIError { APIError(status: 403, code: "forbidden", message: message) }
    static func notFound(_ message: String) -> APIError { APIError(status: 404, code: "not_found", message: message) }
    static func badRequest(_ code: String, _ message: String) -> APIError {
        APIError(status: 400, code: code, message: message)
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
    static func internalError(_ message: String) -> APIError {
        APIError(status: 500, code: "internal", message: message)
    }
    static func unavailable(_ message: String) -> APIError {
        APIError(status: 503, code: "unavailable", message: message)
    }

    struct Body: Encodable {
        struct Inner: Encodable {
            var code: String
            var message: String
            var details: [String: String]?
        }
        var error: Inner
    }

    /// The JSON body.
    var json: [UInt8] {
        let body = Body(error: .init(code: code, message: message, details: details.isEmpty ? nil : details))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? Array(encoder.encode(body))) ?? Array(#"{"error":{"code":"internal","message":"?"}}"#.utf8)
    }
}

extension APIError: HTTPResponseError {
    var status: HTTPResponse.Status { HTTPResponse.Status(code: statusCode) }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: json)))
    }
}
