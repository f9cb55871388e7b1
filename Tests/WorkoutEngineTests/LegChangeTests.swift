import Foundation
import Testing
import WorkoutEngine
import WorkoutModel

@Suite("Swim-bike-run: leg changes")
struct LegChangeTests {
    @Test func aLegCannotBeEmpty() throws {
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .swimBikeRun), clock: ManualClock(t(0)))
        try session.start(at: t(0))
        #expect(throws: EngineError.activityWouldBeEmpty(start: t(0))) { try session.advanceToNextLeg(at: t(0)) }
        #expect(session.currentLegIndex == 0)
        try session.advanceToNextLeg(at: t(1))
        #expect(session.currentLegIndex == 1)
    }
}
