import Foundation
import WorkoutFormats
import WorkoutModel

/// Our figures next to what an Apple Health export states, per activity (or for the workout when
/// it has none, and for the workout as row 0 when it has some).
///
/// "Ours" are only the engine's own statistics, recomputed from the samples and lengths kept (a
/// statistic filled from Apple's because nothing was there to recompute it is not ours and is left
/// blank: `FileImport.statedStatisticsKey`).
enum HealthComparison {
    static let distanceTypes: [QuantityType] = [
        .distanceWalkingRunning, .distanceCycling, .distanceSwimming, .distancePaddleSports,
    ]

    static func rows(workout: Workout, stated: Metadata) -> [ComparisonRow] {
        var rows: [ComparisonRow] = []
        func device(_ span: String, start: Date, end: Date) -> ComparedFigures {
            func value(_ type: QuantityType, _ field: String) -> Double? {
                stated[HealthMetadataKey.stated(span: span, type: type.rawValue, field: field)]?.numberValue
            }
            var figures = ComparedFigures()
            figures.averageHeartRate = value(.heartRate, "average")
            figures.maximumHeartRate = value(.heartRate, "maximum")
            let distances = distanceTypes.compactMap { value($0, "sum") }
            figures.distance = distances.isEmpty ? nil : distances.reduce(0, +)
            figures.elapsed = end.timeIntervalSince(start)
            figures.timerTime = stated[HealthMetadataKey.stated(span: span, type: "time", field: "duration")]?.numberValue
            figures.strokes = value(.swimmingStrokeCount, "sum")
            return figures
        }
        let filled = Set(
            (workout.metadata[FileImport.statedStatisticsKey]?.stringValue ?? "").split(separator: ",").map(String.init))
        func ours(
            _ statistics: [QuantityType: Statistics], span: String, start: Date, end: Date, duration: TimeInterval
        ) -> ComparedFigures {
            func own(_ type: QuantityType) -> Statistics? {
                guard let statistic = statistics[type], !filled.contains("\(span).\(type.rawValue)") else { return nil }
                return statistic
            }
            var figures = ComparedFigures()
            figures.averageHeartRate = own(.heartRate)?.average?.doubleValue(for: .countPerMinute)
            figures.maximumHeartRate = own(.heartRate)?.maximum?.doubleValue(for: .countPerMinute)
            let distances = distanceTypes.compactMap { own($0)?.sum?.doubleValue(for: .meter) }
            figures.distance = distances.isEmpty ? nil : distances.reduce(0, +)
            figures.elapsed = end.timeIntervalSince(start)
            figures.timerTime = duration
            figures.strokes = own(.swimmingStrokeCount)?.sum?.doubleValue(for: .count)
            figures.swolf = statistics[.swimmingSWOLF]?.average?.value
            let lengths = workout.events.filter {
                $0.start >= start && $0.start < end && $0.type == .lap
                    && $0.metadata[SwimMetadataKey.lengthKind] == .string(LengthKind.active.rawValue)
            }
            if !lengths.isEmpty {
                figures.lengths = lengths.count
                figures.activeLengths = lengths.count
            }
            return figures
        }
        let sport = stated[HealthMetadataKey.activityType]?.stringValue?
            .replacingOccurrences(of: "HKWorkoutActivityType", with: "") ?? workout.activityType.rawValue
        rows.append(
            ComparisonRow(
                .session, number: workout.activities.isEmpty ? 1 : 0, sport: sport, start: workout.start,
                device: device("workout", start: workout.start, end: workout.end),
                ours: ours(workout.statistics, span: "workout", start: workout.start, end: workout.end, duration: workout.duration)))
        for (index, activity) in workout.activities.enumerated() {
            let end = activity.end ?? workout.end
            rows.append(
                ComparisonRow(
                    .session, number: index + 1, sport: activity.configuration.activityType.rawValue,
                    start: activity.start, device: device("activity\(index + 1)", start: activity.start, end: end),
                    ours: ours(activity.statistics, span: "activity\(index + 1)", start: activity.start, end: end, duration: activity.duration)))
        }
        return rows
    }
}
