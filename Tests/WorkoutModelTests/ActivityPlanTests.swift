import Foundation
import Testing
import WorkoutModel

/// The legs a multisport activity type plans.
@Suite("Model: activity plans")
struct ActivityPlanTests {
    @Test func swimBikeRunPlansFiveLegs() {
        let configuration = WorkoutConfiguration(
            activityType: .swimBikeRun, locationType: .outdoor, swimmingLocationType: .pool,
            lapLength: Quantity(50, .meter))
        let legs = configuration.plannedLegs
        #expect(legs.map(\.activityType) == [.swimming, .transition, .cycling, .transition, .running])
        #expect(legs[0].lapLength == Quantity(50, .meter))
        #expect(legs[0].swimmingLocationType == .pool)
        #expect(WorkoutConfiguration(activityType: .running).plannedLegs.isEmpty)
    }
}
