import Foundation
import Testing
import WorkoutEngine
import WorkoutModel

@Suite("Live builder: laps")
struct LapToleranceTests {
    @Test func lapsThatTouchUpToRoundingAreNotOverlaps() throws {
        let (builder, _) = try collectingBuilder(.swimming)
        let first = WorkoutEvent(type: .lap, start: t(0.1), duration: 28.3)
        // The next lap starts where the first "ends", give or take the rounding of start + duration.
        let second = WorkoutEvent(type: .lap, start: t(0.1).addingTimeInterval(28.3 - 1e-6), duration: 30)
        try builder.add([first, second])
        #expect(builder.events.count == 2)
        #expect(throws: EngineError.self) {
            try builder.add([WorkoutEvent(type: .lap, start: t(58.0), duration: 5)])  // a real overlap of 0.4 s
        }
    }
}
