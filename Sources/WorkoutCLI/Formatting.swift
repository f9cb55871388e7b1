import Foundation
import WorkoutEngine
import WorkoutFormats
import WorkoutModel
import WorkoutStore

/// Text and JSON output shared by the commands: small pure functions.
enum Format {
    /// `h:mm:ss`, rounded to the second (`0:05:00`, `26:03:09`); `-` when unknown.
    static func duration(_ seconds: TimeInterval?) -> String {
        guard let seconds, seconds.isFinite, abs(seconds) < 1e12 else { return "-" }
        let total = Int(seconds.rounded())
        let magnitude = abs(total)
        return (total < 0 ? "-" : "") + "\(magnitude / 3600):" + twoDigits(magnitude / 60 % 60) + ":"
            + twoDigits(magnitude % 60)
    }

    /// `m:ss`, rounded to the second (a pace: `5:07`).
    static func minutesSeconds(_ seconds: TimeInterval) -> String {
        guard seconds.isFinite, seconds >= 0, seconds < 1e12 else { return "-" }
        let total = Int(seconds.rounded())
        return "\(total / 60):" + twoDigits(total % 60)
    }

    /// ISO 8601 in UTC to the second: `2026-05-09T00:53:20Z`.
    static func timestamp(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle())
    }

    /// ISO 8601 in UTC with milliseconds: `2015-01-05T08:05:21.687Z` (the JSON outputs' date form).
    /// Rounded to the nearest millisecond: the format style truncates, which turns the .687 stored
    /// as .68699998… into .686.
    static func jsonTimestamp(_ date: Date) -> String {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
        guard milliseconds.isFinite, abs(milliseconds) < 1e17 else {
            return date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        }
        let seconds = (milliseconds / 1000).rounded(.down)
        let whole = Date(timeIntervalSince1970: seconds).formatted(Date.ISO8601FormatStyle())
        return whole.dropLast() + String(format: ".%03dZ", Int(milliseconds - seconds * 1000))
    }

    /// A progress or status line for a terminal: back to the line's start and erase it (`ESC [K`)
    /// before drawing, so a shorter line leaves nothing of a longer one behind. Callers draw it on
    /// standard error, and only when that is a terminal.
    ///
    /// Cut to 79 characters (`…` at the end): a line wider than the terminal wraps, and the erase
    /// reaches only its last row, so every redraw would leave a row behind on an 80-column terminal.
    static func progressLine(_ text: String) -> String {
        let width = 79
        return "\r\u{1B}[K" + (text.count > width ? text.prefix(width - 1) + "…" : text)
    }

    /// Kilometres with two decimals: `2.73 km`; `-` when unknown.
    static func kilometres(_ meters: Double?) -> String {
        guard let meters, meters.isFinite else { return "-" }
        return String(format: "%.2f km", meters / 1000)
    }

    /// A whole number with a unit (`145 bpm`, `210 W`); `-` when unknown.
    static func whole(_ value: Double?, _ unit: String) -> String {
        guard let value, value.isFinite else { return "-" }
        return String(format: "%.0f", value) + " " + unit
    }

    /// Speed or pace from a distance and an active duration, as athletes of the sport read it:
    /// pace per km for running and walking, per 100 m for swimming, km/h otherwise.
    static func speedOrPace(meters: Double?, seconds: TimeInterval, type: WorkoutActivityType) -> String {
        guard let meters, meters > 0, meters.isFinite, seconds > 0, seconds.isFinite else { return "-" }
        switch type {
        case .running, .walking:
            return minutesSeconds(seconds / (meters / 1000)) + " /km"
        case .swimming:
            return minutesSeconds(seconds / (meters / 100)) + " /100m"
        case .cycling, .swimBikeRun, .transition, .other, .paddleSports:
            return String(format: "%.1f km/h", meters / seconds * 3.6)
        }
    }

    /// Rows as aligned columns (two spaces apart, no trailing spaces); `rightAligned` holds the
    /// indices of numeric columns.
    static func table(_ rows: [[String]], rightAligned: Set<Int> = []) -> [String] {
        let columns = rows.map(\.count).max() ?? 0
        let widths = (0..<columns).map { column in
            rows.map { column < $0.count ? $0[column].count : 0 }.max() ?? 0
        }
        return rows.map { row in
            let cells = row.enumerated().map { column, cell in
                let padding = String(repeating: " ", count: widths[column] - cell.count)
                return rightAligned.contains(column) ? padding + cell : cell + padding
            }
            var line = cells.joined(separator: "  ")
            while line.last == " " { line.removeLast() }
            return line
        }
    }

    /// A workout as the outputs show it: a Garmin device stored by an earlier import by its product
    /// number (`Garmin product 1765`) is named (`Garmin Forerunner 920XT`), the number kept in
    /// `ImportProduct`. The stored workout is not changed.
    static func presented(_ workout: Workout) -> Workout {
        let prefix = "Garmin product "
        guard let device = workout.metadata[ImportMetadataKey.device]?.stringValue, device.hasPrefix(prefix),
            let number = Int(device.dropFirst(prefix.count))
        else { return workout }
        var presented = workout
        presented.metadata[ImportMetadataKey.device] = .string(GarminProduct.resolvingNumber(in: device))
        if presented.metadata[ImportMetadataKey.product] == nil {
            presented.metadata[ImportMetadataKey.product] = .int(number)
        }
        return presented
    }

    /// JSON with sorted keys, ISO 8601 dates with milliseconds in UTC and metadata as plain values,
    /// for scripts (docs/schemas describes each command's output).
    static func json<T: Encodable>(_ value: T) throws(UserFacingError) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(jsonTimestamp(date))
        }
        do {
            return String(decoding: try encoder.encode(value), as: UTF8.self)
        } catch {
            throw UserFacingError(error)
        }
    }

    private static func twoDigits(_ value: Int) -> String {
        value < 10 ? "0\(value)" : "\(value)"
    }

    // MARK: workouts

    /// One line per workout: id, start, type, elapsed and active duration, distance, average heart rate.
    static func workoutLines(_ workouts: [Workout]) -> [String] {
        let rows = workouts.map { workout in
            [
                workout.id.uuidString, timestamp(workout.start), workout.activityType.rawValue,
                duration(workout.elapsed) + " elapsed", duration(workout.duration) + " active",
                kilometres(workout.statistics.distance), whole(workout.statistics.average(.heartRate), "bpm") + " avg",
            ]
        }
        return table(rows, rightAligned: [3, 4, 5, 6])
    }

    /// The workout's header, then a table with one row per activity and a totals row.
    static func workoutDetail(_ workout: Workout) -> [String] {
        let statistics = workout.statistics
        var type = workout.activityType.rawValue
        if workout.configuration.locationType != .unknown {
            type += " (\(workout.configuration.locationType.rawValue))"
        }
        var header: [[String]] = [
            ["workout", workout.id.uuidString],
            ["type", type],
        ]
        if let device = workout.metadata[ImportMetadataKey.device]?.stringValue {
            header.append(["device", GarminProduct.resolvingNumber(in: device)])
        }
        header += [
            ["start", timestamp(workout.start)],
            ["end", timestamp(workout.end)],
            ["elapsed", duration(workout.elapsed)],
            ["active", duration(workout.duration)],
            ["distance", kilometres(statistics.distance)],
            [
                "heart rate",
                "avg " + whole(statistics.average(.heartRate), "bpm") + ", max "
                    + whole(statistics.maximum(.heartRate), "bpm"),
            ],
        ]
        if let energy = statistics[.activeEnergyBurned]?.sum?.doubleValue(for: .kilocalorie) {
            header.append(["energy", whole(energy, "kcal")])
        }
        if !workout.events.isEmpty {
            let counts = Dictionary(grouping: workout.events, by: \.type).map { "\($0.key.rawValue) \($0.value.count)" }
            header.append(["events", counts.sorted().joined(separator: ", ")])
        }
        if let swolf = statistics[.swimmingSWOLF], let average = swolf.average?.value {
            header.append(["SWOLF", String(format: "avg %.1f over %d active lengths", average, swolf.sampleCount)])
        }
        if let recovery = recoveryLine(workout.metadata) { header.append(["recovery", recovery]) }
        var counters = "\(workout.counters.accepted) accepted, \(workout.counters.totalDropped) dropped"
        let reasons = workout.counters.dropped.filter { $0.value > 0 }.map { "\($0.key.rawValue) \($0.value)" }
        if !reasons.isEmpty { counters += " (" + reasons.sorted().joined(separator: ", ") + ")" }
        header.append(["samples", counters])
        header.append(["activities", "\(workout.activities.count)"])

        var rows: [[String]] = [
            ["#", "TYPE", "OFFSET", "ELAPSED", "ACTIVE", "DISTANCE", "AVG HR", "MAX HR", "SPEED/PACE", "AVG POWER"]
        ]
        for (index, activity) in workout.activities.enumerated() {
            rows.append(
                row(
                    number: "\(index + 1)", type: activity.configuration.activityType,
                    offset: duration(activity.start.timeIntervalSince(workout.start)), elapsed: activity.elapsed,
                    active: activity.duration, statistics: activity.statistics))
        }
        rows.append(
            row(
                number: "", type: workout.activityType, label: "total", offset: "", elapsed: workout.elapsed,
                active: workout.duration, statistics: statistics))
        var lines = table(header) + [""] + table(rows, rightAligned: [0, 2, 3, 4, 5, 6, 7, 8, 9])
        let sets = workout.events.filter { $0.metadata[MetadataKey.segmentKind] == .string("swimSet") }
        if !sets.isEmpty {
            var setRows: [[String]] = [["SET", "OFFSET", "TIME", "STYLE", "LENGTHS", "ACTIVE", "SWOLF"]]
            for (index, set) in sets.enumerated() {
                var style = "-"
                if case .string(let value)? = set.metadata[SwimMetadataKey.strokeStyle] { style = value }
                var lengths = "-"
                if case .int(let value)? = set.metadata[SwimMetadataKey.lengths] { lengths = "\(value)" }
                var active = "-"
                if case .int(let value)? = set.metadata[SwimMetadataKey.activeLengths] { active = "\(value)" }
                var swolf = "-"
                if case .double(let value)? = set.metadata[SwimMetadataKey.swolf] {
                    swolf = String(format: "%.1f", value)
                }
                setRows.append([
                    "\(index + 1)", duration(set.start.timeIntervalSince(workout.start)), duration(set.duration), style,
                    lengths, active, swolf,
                ])
            }
            lines += [""] + table(setRows, rightAligned: [0, 1, 2, 4, 5, 6])
        }
        return lines
    }

    /// `HRR1 34 bpm (168 → 134), 2-min drop 58 bpm`, or why they are missing; nil when neither is known.
    static func recoveryLine(_ metadata: Metadata) -> String? {
        func number(_ key: String) -> Double? {
            if case .double(let value)? = metadata[key] { return value }
            return nil
        }
        func reason(_ key: String) -> String? {
            if case .string(let raw)? = metadata[key] {
                return HeartRateRecoveryUnavailable(rawValue: raw)?.description ?? raw
            }
            return nil
        }
        var parts: [String] = []
        if let value = number(MetadataKey.heartRateRecoveryOneMinute) {
            parts.append("HRR1 " + whole(value, "bpm"))
        } else if let why = reason(MetadataKey.heartRateRecoveryOneMinuteUnavailable) {
            parts.append("HRR1 unavailable: \(why)")
        }
        if let value = number(MetadataKey.heartRateRecoveryTwoMinutes) {
            parts.append("2-min drop " + whole(value, "bpm"))
        } else if let why = reason(MetadataKey.heartRateRecoveryTwoMinutesUnavailable) {
            parts.append("2-min drop unavailable: \(why)")
        }
        return parts.isEmpty ? nil : parts.joined(separator: ", ")
    }

    private static func row(
        number: String, type: WorkoutActivityType, label: String? = nil, offset: String, elapsed: TimeInterval?,
        active: TimeInterval, statistics: [QuantityType: Statistics]
    ) -> [String] {
        let power = powerType(for: type, in: statistics).flatMap { statistics.average($0) }
        return [
            number, label ?? type.rawValue, offset, duration(elapsed), duration(active),
            kilometres(statistics.distance), whole(statistics.average(.heartRate), "bpm"),
            whole(statistics.maximum(.heartRate), "bpm"),
            speedOrPace(meters: statistics.distance, seconds: active, type: type), whole(power, "W"),
        ]
    }

    /// Cycling power for cycling, running power for running; otherwise whichever one is present
    /// (none when both are, as in a triathlon's totals).
    static func powerType(for type: WorkoutActivityType, in statistics: [QuantityType: Statistics]) -> QuantityType? {
        switch type {
        case .cycling: return .cyclingPower
        case .running: return .runningPower
        case .swimming, .swimBikeRun, .transition, .walking, .other, .paddleSports:
            let present = [QuantityType.cyclingPower, .runningPower].filter { statistics[$0]?.average != nil }
            return present.count == 1 ? present.first : nil
        }
    }
}

extension Dictionary where Key == QuantityType, Value == Statistics {
    /// The sum of the distance types in meters (swimming, cycling, walking and running, paddling); nil when
    /// none was recorded.
    var distance: Double? {
        let types: [QuantityType] = [
            .distanceSwimming, .distanceCycling, .distanceWalkingRunning, .distancePaddleSports,
        ]
        let sums = types.compactMap {
            self[$0]?.sum?.doubleValue(for: .meter)
        }
        return sums.isEmpty ? nil : sums.reduce(0, +)
    }

    /// The average of `type` in its canonical unit.
    func average(_ type: QuantityType) -> Double? {
        self[type]?.average?.doubleValue(for: type.canonicalUnit)
    }

    /// The maximum of `type` in its canonical unit.
    func maximum(_ type: QuantityType) -> Double? {
        self[type]?.maximum?.doubleValue(for: type.canonicalUnit)
    }
}
