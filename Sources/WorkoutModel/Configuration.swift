/// What the athlete is doing, as in HealthKit's HKWorkoutActivityType (the subset we record).
public enum WorkoutActivityType: String, Sendable, Codable, Hashable, CaseIterable {
    case swimming
    case cycling
    case running
    /// A triathlon: swim, T1, bike, T2, run as activities of one workout.
    case swimBikeRun
    /// A multisport transition (T1, T2).
    case transition
    case walking
    case other
    /// Paddling a boat: kayak, canoe, stand-up paddleboard, rafting (HealthKit's `paddleSports`).
    case paddleSports
}

/// Indoor or outdoor, as in HKWorkoutSessionLocationType.
public enum LocationType: String, Sendable, Codable, Hashable, CaseIterable {
    case unknown
    case indoor
    case outdoor
}

/// Pool or open water, as in HKWorkoutSwimmingLocationType.
public enum SwimmingLocationType: String, Sendable, Codable, Hashable, CaseIterable {
    case unknown
    case pool
    case openWater
}

/// How a workout or one of its activities is set up.
public struct WorkoutConfiguration: Sendable, Hashable, Codable {
    public var activityType: WorkoutActivityType
    public var locationType: LocationType
    public var swimmingLocationType: SwimmingLocationType
    /// Pool length for pool swims (a length quantity); nil otherwise.
    public var lapLength: Quantity?

    public init(
        activityType: WorkoutActivityType, locationType: LocationType = .unknown,
        swimmingLocationType: SwimmingLocationType = .unknown, lapLength: Quantity? = nil
    ) {
        self.activityType = activityType
        self.locationType = locationType
        self.swimmingLocationType = swimmingLocationType
        self.lapLength = lapLength
    }

    /// The legs a multisport configuration is raced in, in order; empty for single sports.
    ///
    /// For swimBikeRun: swim (with this configuration's swimming location and lap length), T1,
    /// bike, T2, run.
    public var plannedLegs: [WorkoutConfiguration] {
        guard activityType == .swimBikeRun else { return [] }
        let swim = WorkoutConfiguration(
            activityType: .swimming,
            locationType: swimmingLocationType == .pool ? .indoor : locationType,
            swimmingLocationType: swimmingLocationType, lapLength: lapLength)
        let transition = WorkoutConfiguration(activityType: .transition, locationType: locationType)
        return [
            swim, transition, WorkoutConfiguration(activityType: .cycling, locationType: locationType),
            transition, WorkoutConfiguration(activityType: .running, locationType: locationType),
        ]
    }
}
