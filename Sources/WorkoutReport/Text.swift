import Foundation
import WorkoutModel

/// Number and text formatting of the report (the same conventions as the CLI's tables).
enum Text {
    /// `Swim`, `Bike`, `Run` … as a leg's label.
    static func sport(_ type: WorkoutActivityType) -> String {
        switch type {
        case .swimming: "Swim"
        case .cycling: "Bike"
        case .running: "Run"
        case .walking: "Walk"
        case .transition: "Transition"
        case .swimBikeRun: "Triathlon"
        case .other: "Other"
        case .paddleSports: "Paddle"
        }
    }

    /// `h:mm:ss`; `-` when unknown.
    static func duration(_ seconds: TimeInterval?) -> String {
        guard let seconds, seconds.isFinite, abs(seconds) < 1e12 else { return "-" }
        let total = Int(seconds.rounded())
        let magnitude = abs(total)
        return (total < 0 ? "-" : "") + "\(magnitude / 3600):" + two(magnitude / 60 % 60) + ":" + two(magnitude % 60)
    }

    /// `m:ss`.
    static func minutesSeconds(_ seconds: TimeInterval) -> String {
        guard seconds.isFinite, seconds >= 0, seconds < 1e9 else { return "-" }
        let total = Int(seconds.rounded())
        return "\(total / 60):" + two(total % 60)
    }

    static func kilometres(_ meters: Double?) -> String {
        guard let meters, meters.isFinite else { return "-" }
        return String(format: "%.2f km", meters / 1000)
    }

    static func whole(_ value: Double?, _ unit: String) -> String {
        guard let value, value.isFinite else { return "-" }
        return String(format: "%.0f", value) + (unit.isEmpty ? "" : " " + unit)
    }

    static func decimal(_ value: Double?, _ digits: Int = 1) -> String {
        guard let value, value.isFinite else { return "-" }
        return String(format: "%.\(digits)f", value)
    }

    /// Pace per km for running and walking, per 100 m for swimming, km/h otherwise.
    static func speedOrPace(meters: Double?, seconds: TimeInterval, type: WorkoutActivityType) -> String {
        guard let meters, meters > 0, meters.isFinite, seconds > 0, seconds.isFinite else { return "-" }
        switch type {
        case .running, .walking: return minutesSeconds(seconds / (meters / 1000)) + " /km"
        case .swimming: return minutesSeconds(seconds / (meters / 100)) + " /100m"
        case .cycling, .swimBikeRun, .transition, .other, .paddleSports:
            return String(format: "%.1f km/h", meters / seconds * 3.6)
        }
    }

    /// ISO 8601 in UTC with milliseconds.
    static func timestamp(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// A readable date and time in UTC: `2026-05-09 06:13 UTC`.
    static func dateTime(_ date: Date) -> String {
        let iso = date.formatted(Date.ISO8601FormatStyle())
        return iso.prefix(10) + " " + iso.dropFirst(11).prefix(5) + " UTC"
    }

    /// Escapes text for HTML and XML (element content and quoted attributes).
    static func escape(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.count)
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            default: result.append(character)
            }
        }
        return result
    }

    /// A coordinate for SVG: one decimal, no trailing `.0`. Values far outside any drawing (from
    /// absurd inputs) are clamped to ±10⁹ rather than trapping when made an integer; NaN is 0.
    static func coordinate(_ value: Double) -> String {
        let rounded = ((value.isNaN ? 0 : min(max(value, -1e9), 1e9)) * 10).rounded() / 10
        if rounded == rounded.rounded() { return String(Int(rounded)) }
        return String(format: "%.1f", rounded)
    }

    private static func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
}
