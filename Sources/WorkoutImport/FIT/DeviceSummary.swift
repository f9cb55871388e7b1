import Foundation
import WorkoutFormats
import WorkoutModel

/// The device's own session summaries as workout metadata (`DeviceSummaryKey`), kept at import so
/// that reports can show ours next to the device's figures later.
enum DeviceSummary {
    /// Metadata describing `sessions` (FIT `session` messages in file order).
    static func metadata(_ sessions: [FITSummary]) -> Metadata {
        guard !sessions.isEmpty else { return [:] }
        var metadata: Metadata = [DeviceSummaryKey.sessions: .int(sessions.count)]
        for (index, session) in sessions.enumerated() {
            func set(_ figure: DeviceSummaryKey.Figure, _ value: MetadataValue?) {
                guard let value, value.isFinite else { return }
                metadata[DeviceSummaryKey.key(session: index + 1, figure)] = value
            }
            set(.sport, .string(FITProfile.Sport.name(session.sport)))
            set(.averageHeartRate, session.avgHeartRate.map { .double(Double($0)) })
            set(.maximumHeartRate, session.maxHeartRate.map { .double(Double($0)) })
            set(.averagePower, session.avgPower.map { .double(Double($0)) })
            set(.distance, session.totalDistance.map { .double($0) })
            set(.elapsed, session.totalElapsedTime.map { .double($0) })
            set(.timerTime, session.totalTimerTime.map { .double($0) })
            set(.lengths, session.numLengths.map { .int(Int($0)) })
            if session.sport == FITProfile.Sport.swimming {
                set(.strokes, session.totalCycles.map { .double(Double($0)) })
            }
            set(.swolf, session.avgSwolf.flatMap { $0 > 0 ? .double(Double($0)) : nil })
        }
        return metadata
    }
}
