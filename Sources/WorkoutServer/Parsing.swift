import Foundation
import Hummingbird
import WorkoutModel
import WorkoutStore

/// A request's query parameters, checked against the names an endpoint knows: anything else is a 400.
///
/// Made after the token is checked (a request without a valid token is a 401 whatever its parameters) and
/// before any database work. The target (path and query) is at most `maximumTargetLength` bytes (414 beyond)
/// and holds at most `maximumCount` parameters (400 `too_many_parameters` beyond).
struct QueryParameters {
    /// The longest request target (path and query string, as sent), bytes.
    static let maximumTargetLength = 8_192
    /// The most query parameters of one request (every endpoint takes a handful).
    static let maximumCount = 32

    private var values: [(String, String)]

    init(_ request: Request, allowed: Set<String>) throws(APIError) {
        let parameters = request.uri.queryParameters
        guard parameters.count <= Self.maximumCount else {
            throw APIError(
                status: 400, code: "too_many_parameters",
                message: "the request has \(parameters.count) query parameters, more than the server's limit of "
                    + "\(Self.maximumCount); send fewer",
                details: ["limit": String(Self.maximumCount)])
        }
        let length = request.uri.description.utf8.count
        guard length <= Self.maximumTargetLength else {
            throw APIError(
                status: 414, code: "uri_too_long",
                message: "the request's path and query are \(length) bytes, more than the server's limit of "
                    + "\(Self.maximumTargetLength); send fewer or shorter parameters",
                details: ["limit": String(Self.maximumTargetLength)])
        }
        values = parameters.map { (String($0.key), String($0.value)) }
        for (name, _) in values where !allowed.contains(name) {
            let known = allowed.isEmpty ? "this endpoint takes none" : "use " + allowed.sorted().joined(separator: ", ")
            throw .badRequest("unknown_parameter", "unknown query parameter '\(name.prefix(64))'; \(known)")
        }
    }

    /// The parameter's value; a parameter given twice is a 400.
    func single(_ name: String) throws(APIError) -> String? {
        let found = all(name)
        guard found.count <= 1 else { throw .badRequest("invalid_parameter", "\(name) is given \(found.count) times; give it once") }
        return found.first
    }

    func all(_ name: String) -> [String] { values.filter { $0.0 == name }.map(\.1) }
}

/// Strict parsers for query parameters: a value is accepted whole or refused with a 400 that says why.
enum Parsing {
    static func activityType(_ text: String) throws(APIError) -> WorkoutActivityType {
        guard let type = WorkoutActivityType(rawValue: text) else {
            throw .badRequest(
                "invalid_parameter",
                "'\(text.prefix(64))' is not an activity type; use one of "
                    + WorkoutActivityType.allCases.map(\.rawValue).joined(separator: ", "))
        }
        return type
    }

    static func quantityType(_ text: String) throws(APIError) -> QuantityType {
        guard let type = QuantityType(rawValue: text) else {
            throw .badRequest(
                "invalid_parameter",
                "'\(text.prefix(64))' is not a quantity type; use one of "
                    + QuantityType.allCases.map(\.rawValue).joined(separator: ", "))
        }
        return type
    }

    /// The most `condition` parameters of one workout query: each is a subquery, and a PostgreSQL plan of a
    /// few hundred took minutes.
    static let maximumConditions = 8

    /// The `condition` parameters of a workout query, counted before any is parsed: more than
    /// `maximumConditions` is a 400 `too_many_conditions`.
    static func conditions(_ texts: [String]) throws(APIError) -> [StatisticCondition] {
        guard texts.count <= maximumConditions else {
            throw APIError(
                status: 400, code: "too_many_conditions",
                message: "\(texts.count) conditions given; a query takes at most \(maximumConditions) "
                    + "(narrow it with type, activity, from, to or durations instead)",
                details: ["limit": String(maximumConditions)])
        }
        var conditions: [StatisticCondition] = []
        for text in texts { conditions.append(try condition(text)) }
        return conditions
    }

    /// `heartRate.average>150`: a statistic of one activity compared with a value in the type's canonical unit.
    static func condition(_ text: String) throws(APIError) -> StatisticCondition {
        let problem = APIError.badRequest(
            "invalid_parameter",
            "condition '\(text.prefix(64))' is not TYPE.AGGREGATE OP NUMBER, e.g. heartRate.average>150 "
                + "(aggregates: average, minimum, maximum, sum; operators: < <= = != >= >)")
        guard let opStart = text.firstIndex(where: { "<>=!".contains($0) }) else { throw problem }
        let left = text[..<opStart]
        let rest = text[opStart...]
        let operators = Comparison.allCases.sorted { $0.rawValue.count > $1.rawValue.count }
        guard let comparison = operators.first(where: { rest.hasPrefix($0.rawValue) }) else { throw problem }
        let number = rest.dropFirst(comparison.rawValue.count)
        let parts = left.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let aggregate = StatisticAggregate(rawValue: String(parts[1])),
            let value = Double(number), value.isFinite
        else { throw problem }
        let type = try quantityType(String(parts[0]))
        return StatisticCondition(type, aggregate, comparison, Quantity(value, type.canonicalUnit))
    }

    static func date(_ text: String, _ name: String) throws(APIError) -> Date {
        guard let date = Wire.parseDate(text) else {
            throw .badRequest("invalid_parameter", "\(name): '\(text.prefix(64))' is not \(FastISODate.expectedForm)")
        }
        return date
    }

    static func seconds(_ text: String, _ name: String) throws(APIError) -> TimeInterval {
        guard let value = Double(text), value.isFinite, value >= 0 else {
            throw .badRequest("invalid_parameter", "\(name): '\(text.prefix(64))' is not a number of seconds >= 0")
        }
        return value
    }

    static func ascending(_ text: String) throws(APIError) -> Bool {
        switch text {
        case "asc": return true
        case "desc": return false
        default: throw .badRequest("invalid_parameter", "order: '\(text.prefix(64))' is not asc or desc")
        }
    }

    static func limit(_ text: String) throws(APIError) -> Int {
        guard let value = Int(text), (1...100_000).contains(value) else {
            throw .badRequest("invalid_parameter", "limit: '\(text.prefix(64))' is not a whole number from 1 to 100000")
        }
        return value
    }

    static func beatsPerMinute(_ text: String, _ name: String) throws(APIError) -> Double {
        guard let value = Double(text), value.isFinite, value > 0 else {
            throw .badRequest("invalid_parameter", "\(name): '\(text.prefix(64))' is not a heart rate in beats per minute")
        }
        return value
    }

    static func storeError(_ error: StoreError) -> APIError {
        if case .invalidQuery(let detail) = error { return .badRequest("invalid_query", detail) }
        if case .timedOut = error {
            return APIError(
                status: 503, code: "query_timeout",
                message: "the database did not answer within the server's statement time limit; ask for less "
                    + "(a shorter date range, fewer conditions) or try again later", detail: "\(error)", retryAfter: 5)
        }
        return .unavailable("the store cannot answer now; try again", detail: "\(error)")
    }
}
