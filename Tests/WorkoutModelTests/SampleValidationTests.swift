import Foundation
import Testing
import WorkoutModel

/// Which samples and route points are valid.
@Suite("Model: sample and route point validity")
struct SampleValidationTests {
    @Test func sampleValidation() throws {
        let source = SourceDevice(name: "test")
        let now = Date(timeIntervalSinceReferenceDate: 0)
        #expect(try QuantitySample(.heartRate, 2, .hertz, at: now, source: source).validate() == 120)
        #expect(throws: SampleValidationError.notFinite(.heartRate, .infinity)) {
            try QuantitySample(.heartRate, .infinity, at: now, source: source).validate()
        }
        #expect(
            throws: SampleValidationError.wrongDimension(.distanceCycling, unit: .countPerMinute, expected: .length)
        ) {
            try QuantitySample(.distanceCycling, 10, .countPerMinute, at: now, source: source).validate()
        }
        #expect(throws: SampleValidationError.self) {
            try QuantitySample(.distanceCycling, -1, at: now, source: source).validate()
        }
        #expect(throws: SampleValidationError.self) {
            try QuantitySample(.distanceCycling, 1, at: now, end: now.addingTimeInterval(-1), source: source).validate()
        }
        let message = SampleValidationError.wrongDimension(.distanceCycling, unit: .countPerMinute, expected: .length)
            .description
        #expect(message.contains("count/min") && message.contains("m"))
    }

    @Test func routePointValidity() {
        let now = Date(timeIntervalSinceReferenceDate: 0)
        #expect(RoutePoint(date: now, latitude: 48, longitude: 11).isValid)
        #expect(!RoutePoint(date: now, latitude: -91, longitude: 11).isValid)
        #expect(!RoutePoint(date: now, latitude: 48, longitude: 181).isValid)
        #expect(!RoutePoint(date: now, latitude: 48, longitude: 11, speed: -1).isValid)
    }
}
