import ArgumentParser
import Foundation
import WorkoutModel
import WorkoutStore

/// "An operator and a number", as `>150` in `--avg-heart-rate '>150'`.
struct ComparisonExpression: Sendable, Hashable {
    var comparison: Comparison
    var value: Double
}

/// A `--from`/`--to` date: a whole UTC day (`2026-05-09`) or an instant (full ISO 8601).
struct DateArgument: Sendable, Hashable {
    /// The instant, or midnight UTC starting the day.
    var date: Date
    /// True for a bare `YYYY-MM-DD`.
    var isWholeDay: Bool

    /// Where a range beginning at this argument starts.
    var rangeStart: Date { date }
    /// Where a range ending at this argument ends (exclusive): after the whole day for a bare date.
    var rangeEnd: Date { isWholeDay ? date.addingTimeInterval(86400) : date }
}

/// The command line's value parsers: small pure functions that throw a `ValidationError` saying
/// what is accepted, for use as ArgumentParser transforms.
enum Parse {
    static let durationHelp = "90s, 30m, 1h30m, 1:30:00 (h:mm:ss), 30:00 (m:ss) or plain seconds"
    static let comparisonHelp = "an operator (<, <=, =, !=, >=, >) and a number, e.g. '>150' (quote it in the shell)"
    static let dateHelp = "YYYY-MM-DD (a UTC day) or ISO 8601 like 2026-05-09T14:30:00Z (no zone means UTC)"

    /// The type names `activityType(_:)` accepts, for help and error texts.
    static var activityTypeNames: String {
        WorkoutActivityType.allCases.map(\.rawValue).joined(separator: ", ")
    }

    private static let activityAliases: [String: WorkoutActivityType] = [
        "swim": .swimming, "bike": .cycling, "ride": .cycling, "run": .running, "walk": .walking,
        "triathlon": .swimBikeRun,
    ]

    /// A workout or activity type: a `WorkoutActivityType` name in any case, with or without `-`/`_`
    /// (`swim-bike-run`), or a short alias (`swim`, `bike`, `run`, `walk`, `triathlon`).
    static func activityType(_ text: String) throws(ValidationError) -> WorkoutActivityType {
        let key = text.lowercased().filter { $0 != "-" && $0 != "_" && $0 != " " }
        if let type = WorkoutActivityType.allCases.first(where: { $0.rawValue.lowercased() == key }) {
            return type
        }
        if let type = activityAliases[key] { return type }
        throw ValidationError("unknown type '\(text)'; use one of \(activityTypeNames)")
    }

    /// A workout id (a UUID, any case).
    static func workoutID(_ text: String) throws(ValidationError) -> UUID {
        guard let id = UUID(uuidString: text.trimmingCharacters(in: .whitespaces)) else {
            throw ValidationError(
                "'\(text)' is not a workout id; ids are UUIDs like 3F2504E0-4F89-11D3-9A0C-0305E82C3301 "
                    + "(`workout list` shows them)")
        }
        return id
    }

    /// A comparison: `>150`, `>=150`, `<120`, `<=120`, `=140` (or `==140`), `!=140`; spaces allowed
    /// around the operator; the number is decimal and finite.
    static func comparison(_ text: String) throws(ValidationError) -> ComparisonExpression {
        let operators: [(String, Comparison)] = [
            ("<=", .lessThanOrEqual), (">=", .greaterThanOrEqual), ("!=", .notEqual), ("==", .equal),
            ("<", .lessThan), (">", .greaterThan), ("=", .equal),
        ]
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        for (symbol, comparison) in operators where trimmed.hasPrefix(symbol) {
            let rest = trimmed.dropFirst(symbol.count).trimmingCharacters(in: .whitespaces)
            guard let value = signedDecimal(rest) else { break }
            return ComparisonExpression(comparison: comparison, value: value)
        }
        throw ValidationError("'\(text)' is not a comparison; use \(comparisonHelp)")
    }

    /// A duration in seconds: `90s`, `30m`, `1h30m`, `1h30m15s`, `1.5h`, `1:30:00` (h:mm:ss),
    /// `30:00` (m:ss) or plain seconds (`1800`, `90.5`).
    static func duration(_ text: String) throws(ValidationError) -> TimeInterval {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        guard let seconds = clockDuration(trimmed) ?? unitDuration(trimmed) ?? decimal(Substring(trimmed)),
            seconds.isFinite
        else {
            throw ValidationError("'\(text)' is not a duration; use \(durationHelp)")
        }
        return seconds
    }

    /// A date: `YYYY-MM-DD` (the UTC day) or ISO 8601 `YYYY-MM-DDTHH:MM[:SS[.fff]][Z|±HH:MM|±HHMM]`
    /// (`T` may be a space; no zone means UTC).
    static func date(_ text: String) throws(ValidationError) -> DateArgument {
        guard let parsed = isoDate(text.trimmingCharacters(in: .whitespaces)) else {
            throw ValidationError("'\(text)' is not a date; use \(dateHelp)")
        }
        return parsed
    }

    // MARK: pieces

    /// Unsigned decimal: digits with at most one point (`12`, `12.5`, `.5`); nil otherwise.
    static func decimal(_ text: Substring) -> Double? {
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
            text.filter({ $0 == "." }).count <= 1, text.contains(where: \.isNumber)
        else { return nil }
        return Double(text)
    }

    /// Decimal with an optional sign.
    static func signedDecimal(_ text: String) -> Double? {
        if text.hasPrefix("-") { return decimal(text.dropFirst()).map { -$0 } }
        if text.hasPrefix("+") { return decimal(text.dropFirst()) }
        return decimal(Substring(text))
    }

    /// `h:mm:ss` or `m:ss`; the last part may have a fraction; later parts must be below 60.
    private static func clockDuration(_ text: String) -> TimeInterval? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2 || parts.count == 3 else { return nil }
        var total = 0.0
        for (index, part) in parts.enumerated() {
            let isLast = index == parts.count - 1
            guard let value = decimal(part), isLast || !part.contains(".") else { return nil }
            if index > 0 {
                guard value < 60, part.count >= 2 else { return nil }
            }
            total = total * 60 + value
        }
        return total
    }

    /// Number–unit pairs in the order h, m, s, each at most once: `1h30m`, `90s`, `1.5h`.
    private static func unitDuration(_ text: String) -> TimeInterval? {
        let units: [Character: Double] = ["h": 3600, "m": 60, "s": 1]
        let order: [Character] = ["h", "m", "s"]
        var total = 0.0
        var number = Substring()
        var next = 0  // index in `order` of the first unit still allowed
        var pairs = 0
        var rest = Substring(text.filter { $0 != " " })
        while let character = rest.first {
            rest = rest.dropFirst()
            if let scale = units[character] {
                guard let position = order.firstIndex(of: character), position >= next, let value = decimal(number)
                else { return nil }
                total += value * scale
                next = position + 1
                number = ""
                pairs += 1
            } else {
                number.append(character)
            }
        }
        guard pairs > 0, number.isEmpty else { return nil }
        return total
    }

    private static func isoDate(_ text: String) -> DateArgument? {
        let pattern = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?)?$/
        guard let match = text.wholeMatch(of: pattern),
            let year = Int(match.1), let month = Int(match.2), let day = Int(match.3),
            (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        var components = DateComponents(year: year, month: month, day: day)
        var fraction = 0.0
        var offset = 0
        if let hourText = match.4, let minuteText = match.5 {
            guard let hour = Int(hourText), let minute = Int(minuteText), (0...23).contains(hour),
                (0...59).contains(minute)
            else { return nil }
            components.hour = hour
            components.minute = minute
            if let secondText = match.6 {
                guard let second = Int(secondText), (0...59).contains(second) else { return nil }
                components.second = second
            }
            if let fractionText = match.7 {
                guard let value = Double("0" + fractionText) else { return nil }
                fraction = value
            }
            if let zone = match.8, zone.lowercased() != "z" {
                let digits = zone.dropFirst().filter { $0 != ":" }
                guard digits.count == 4, let hours = Int(digits.prefix(2)), let minutes = Int(digits.suffix(2)),
                    hours <= 23, minutes <= 59
                else { return nil }
                offset = (hours * 3600 + minutes * 60) * (zone.hasPrefix("-") ? -1 : 1)
            }
        }
        var calendar = Calendar(identifier: .gregorian)
        guard let utc = TimeZone(identifier: "UTC") else { return nil }
        calendar.timeZone = utc
        guard let date = calendar.date(from: components),
            calendar.component(.day, from: date) == day, calendar.component(.month, from: date) == month
        else { return nil }  // 2026-02-30 and the like
        return DateArgument(
            date: date.addingTimeInterval(fraction - Double(offset)), isWholeDay: match.4 == nil)
    }
}
