import WorkoutModel

/// Decides which quantity types each activity collects, as HKLiveWorkoutDataSource does.
///
/// By default the set follows the activity: heart rate and active energy always; swimming adds
/// swimming distance and strokes; cycling adds cycling distance, speed, cadence and power; running
/// and walking add walking/running distance, running speed, cadence, power and stride; transitions
/// add walking/running distance. A swim-bike-run workout outside its legs, and `other`, collect
/// everything. Set `explicitTypes` to collect one fixed set everywhere instead. Samples of a type
/// the current activity does not collect are dropped and counted as `notCollected`; SWOLF samples
/// always are (SWOLF is derived from pool lengths).
public struct WorkoutDataSource: Sendable, Hashable {
    /// When set, every activity collects exactly these types.
    public var explicitTypes: Set<QuantityType>?

    public init(explicitTypes: Set<QuantityType>? = nil) {
        self.explicitTypes = explicitTypes
    }

    /// The types collected while an activity with `configuration` is current.
    public func typesToCollect(for configuration: WorkoutConfiguration) -> Set<QuantityType> {
        if let explicitTypes { return explicitTypes }
        let always: Set<QuantityType> = [.heartRate, .activeEnergyBurned, .heartRateRecoveryOneMinute]
        switch configuration.activityType {
        case .swimming:
            return always.union([.distanceSwimming, .swimmingStrokeCount])
        case .cycling:
            return always.union([.distanceCycling, .cyclingSpeed, .cyclingCadence, .cyclingPower])
        case .running, .walking:
            return always.union([
                .distanceWalkingRunning, .runningSpeed, .runningCadence, .runningPower, .runningStrideLength,
            ])
        case .transition:
            return always.union([.distanceWalkingRunning])
        case .paddleSports:
            return always.union([.distancePaddleSports, .paddleSportsSpeed])
        case .swimBikeRun, .other:
            return Set(QuantityType.allCases)
        }
    }

    /// The collection mask; SWOLF is derived from length events and never collected as samples.
    func mask(for configuration: WorkoutConfiguration) -> UInt64 {
        typesToCollect(for: configuration).reduce(0) { $0 | (1 << UInt64($1.index)) }
            & ~(1 << UInt64(QuantityType.swimmingSWOLF.index))
    }
}
