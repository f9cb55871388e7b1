import Foundation
import WorkoutEngine
import WorkoutModel
@_exported import WorkoutTestSupport

let strap = SourceDevice(name: "HRM", identifier: "ant:120:1")
let bikeSensor = SourceDevice(name: "Bike", identifier: "ant:121:2")
let footPod = SourceDevice(name: "Pod", identifier: "ant:124:3")

func hr(_ bpm: Double, at seconds: Double, source: SourceDevice = strap) -> QuantitySample {
    QuantitySample(.heartRate, bpm, at: t(seconds), source: source)
}

/// A builder already collecting from t(0), with a manual clock.
func collectingBuilder(
    _ type: WorkoutActivityType = .running, options: BuilderOptions = BuilderOptions(),
    sink: (any WorkoutRecordingSink)? = nil
) throws -> (LiveWorkoutBuilder, ManualClock) {
    let clock = ManualClock(t(0))
    let builder = try LiveWorkoutBuilder(
        configuration: WorkoutConfiguration(activityType: type), clock: clock, options: options, sink: sink)
    try builder.beginCollection(at: t(0))
    return (builder, clock)
}

extension Statistics {
    var averageValue: Double? { average?.value }
    var sumValue: Double? { sum?.value }
}

/// The watch (watch-link) as a sample source.
let watch = SourceDevice(name: "Watch", identifier: "watch-link:1")

/// A metadata value as a number (double or int), else nil.
func number(_ value: MetadataValue?) -> Double? {
    switch value {
    case .double(let number)?: number
    case .int(let number)?: Double(number)
    default: nil
    }
}

extension BuilderOptions {
    /// Options are validated when a builder is made; make one to validate.
    func validateForTests() throws {
        _ = try LiveWorkoutBuilder(configuration: WorkoutConfiguration(activityType: .running), options: self)
    }
}
