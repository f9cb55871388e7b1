import Foundation
import WorkoutModel
import WorkoutStore

/// What a report is drawn from: a saved workout with its samples and route, as the store's public
/// API returns them.
public struct ReportInput: Sendable {
    public var workout: Workout
    public var samples: [QuantitySample]
    public var route: [RoutePoint]

    public init(workout: Workout, samples: [QuantitySample], route: [RoutePoint]) {
        self.workout = workout
        self.samples = samples
        self.route = route
    }

    /// Reads workout `id`, its samples and its route from `store`.
    public static func load(id: UUID, from store: WorkoutStore) throws(ReportError) -> ReportInput {
        let workout: Workout?
        do {
            workout = try store.workout(id: id)
        } catch {
            throw .store(error)
        }
        guard let workout else { throw .workoutNotFound(id) }
        do {
            return ReportInput(
                workout: workout, samples: try store.samples(workout: id), route: try store.route(workout: id))
        } catch {
            throw .store(error)
        }
    }
}

/// Why a report could not be made.
public enum ReportError: Error, Sendable, CustomStringConvertible {
    case workoutNotFound(UUID)
    case store(StoreError)

    public var description: String {
        switch self {
        case .workoutNotFound(let id): "no workout \(id) in the store; `workout list` shows the stored ones"
        case .store(let error): String(describing: error)
        }
    }
}

/// How a report is drawn.
public struct ReportOptions: Sendable, Hashable {
    /// The athlete's maximum heart rate, count/min (default 190).
    public var maximumHeartRate: Double
    /// The athlete's resting heart rate, count/min (default 60).
    public var restingHeartRate: Double
    /// Pixel columns of the time charts: each series is drawn as min/max/mean per column (default 1000).
    public var columns: Int

    /// The defaults: maximum 190 count/min, resting 60 count/min, 1000 columns.
    public init(maximumHeartRate: Double = 190, restingHeartRate: Double = 60, columns: Int = 1000) {
        self.maximumHeartRate = maximumHeartRate
        self.restingHeartRate = restingHeartRate
        self.columns = columns
    }

    /// Why these options cannot draw a report; nil when they can.
    ///
    /// Heart rates must lie in the range the engine accepts readings in (1–300 count/min).
    public var problem: String? {
        let possible = QuantityType.heartRate.validRange
        guard possible.contains(maximumHeartRate), possible.contains(restingHeartRate) else {
            return "heart rates must be \(Int(possible.lowerBound)) to \(Int(possible.upperBound)) bpm"
        }
        guard maximumHeartRate > restingHeartRate else {
            return "the maximum heart rate (\(Int(maximumHeartRate))) must be above the resting heart rate "
                + "(\(Int(restingHeartRate)))"
        }
        guard (100...4000).contains(columns) else { return "columns must be 100 to 4000" }
        return nil
    }
}
