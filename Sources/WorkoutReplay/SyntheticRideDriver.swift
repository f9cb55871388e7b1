import Foundation
import WorkoutEngine
import WorkoutModel
import WorkoutSimulator

/// Records a `SyntheticRide` into a session: a new cycling activity every `leg` seconds, samples
/// second by second, then stop and end. Continues from wherever the session's builder is (the
/// number of samples it accepted), so a session recovered after a crash resumes exactly where it was.
public enum SyntheticRideDriver {
    /// - Parameters:
    ///   - seconds: the ride's length.
    ///   - leg: seconds per activity.
    ///   - afterSecond: called after each ride second (pacing, progress); may throw to stop.
    public static func drive(
        _ session: WorkoutSession, ride: SyntheticRide, clock: ManualClock, seconds: Int, leg: Int,
        afterSecond: (Int) throws -> Void = { _ in }
    ) throws {
        var index = session.builder.counters.accepted
        let total = seconds * SyntheticRide.streams
        while index < total {
            let second = index / SyntheticRide.streams
            clock.set(ride.date(second))
            // A recovered session may already have begun this second's activity.
            if second % leg == 0, index % SyntheticRide.streams == 0,
                session.builder.currentActivity()?.start != ride.date(second)
            {
                try session.beginNewActivity(
                    configuration: WorkoutConfiguration(activityType: .cycling), at: ride.date(second))
            }
            let end = min(total, (second + 1) * SyntheticRide.streams)
            try session.builder.add(ride.samples(index..<end))
            index = end
            try afterSecond(second)
        }
        try session.stop(at: ride.date(seconds))
        try session.end(at: ride.date(seconds))
    }
}
