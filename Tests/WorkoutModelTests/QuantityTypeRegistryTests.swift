import Foundation
import Testing
import WorkoutModel

/// The quantity types are one table (`QuantityType.registry`): identifiers, units, aggregation,
/// HealthKit identifiers and the dense index all come from it.
@Suite("Quantity type registry")
struct QuantityTypeRegistryTests {
    /// The identifiers stores, JSON and the CLI wrote before the registry: they must never change.
    @Test func theStoredIdentifiersAreUnchanged() {
        let stored = [
            "heartRate", "distanceSwimming", "distanceCycling", "distanceWalkingRunning", "swimmingStrokeCount",
            "cyclingPower", "cyclingCadence", "cyclingSpeed", "runningPower", "runningSpeed", "runningCadence",
            "runningStrideLength", "activeEnergyBurned", "heartRateRecoveryOneMinute", "swimmingSWOLF",
        ]
        let constants: [QuantityType] = [
            .heartRate, .distanceSwimming, .distanceCycling, .distanceWalkingRunning, .swimmingStrokeCount,
            .cyclingPower, .cyclingCadence, .cyclingSpeed, .runningPower, .runningSpeed, .runningCadence,
            .runningStrideLength, .activeEnergyBurned, .heartRateRecoveryOneMinute, .swimmingSWOLF,
        ]
        #expect(constants.map(\.rawValue) == stored)
        for identifier in stored {
            #expect(QuantityType(rawValue: identifier)?.rawValue == identifier)
        }
        #expect(QuantityType(rawValue: "mood") == nil)
    }

    @Test func identifiersAndHealthKitIdentifiersAreUnique() {
        let identifiers = QuantityType.registry.map(\.identifier)
        #expect(Set(identifiers).count == identifiers.count)
        let healthKit = QuantityType.registry.compactMap(\.healthKitIdentifier)
        #expect(Set(healthKit).count == healthKit.count)
        // The builder's collection masks are 64 bits wide.
        #expect(QuantityType.allCases.count <= 64)
        for type in QuantityType.allCases {
            #expect(QuantityType.registry[type.index].identifier == type.rawValue)
            if let identifier = type.healthKitIdentifier {
                #expect(QuantityType(healthKitIdentifier: identifier) == type)
            }
        }
        #expect(QuantityType(healthKitIdentifier: "HKQuantityTypeIdentifierHeartRate") == .heartRate)
        #expect(QuantityType(healthKitIdentifier: "HKQuantityTypeIdentifierDietaryFiber") == nil)
    }

    /// The types Apple Watch workouts state in their statistics, with HealthKit's units and styles.
    @Test func appleWatchWorkoutTypesHaveTheirUnitsAndAggregation() {
        let expected: [(QuantityType, String, AggregationStyle, QuantityUnit)] = [
            (.basalEnergyBurned, "HKQuantityTypeIdentifierBasalEnergyBurned", .cumulative, .kilocalorie),
            (.stepCount, "HKQuantityTypeIdentifierStepCount", .cumulative, .count),
            (.runningGroundContactTime, "HKQuantityTypeIdentifierRunningGroundContactTime", .discrete, .millisecond),
            (.runningVerticalOscillation, "HKQuantityTypeIdentifierRunningVerticalOscillation", .discrete, .centimeter),
            (.runningStrideLength, "HKQuantityTypeIdentifierRunningStrideLength", .discrete, .meter),
            (.runningSpeed, "HKQuantityTypeIdentifierRunningSpeed", .discrete, .meterPerSecond),
            (.flightsClimbed, "HKQuantityTypeIdentifierFlightsClimbed", .cumulative, .count),
        ]
        for (type, healthKit, style, unit) in expected {
            #expect(QuantityType(healthKitIdentifier: healthKit) == type, "\(healthKit)")
            #expect(type.aggregationStyle == style, "\(type)")
            #expect(type.canonicalUnit == unit, "\(type)")
        }
        #expect(QuantityType.elevationAscended.aggregationStyle == .cumulative)
        #expect(QuantityType.elevationAscended.canonicalUnit == .meter)
    }

    @Test func typesCodeAsTheirIdentifiersAlsoAsDictionaryKeys() throws {
        let encoded = try JSONEncoder().encode([QuantityType.basalEnergyBurned, .heartRate])
        #expect(String(decoding: encoded, as: UTF8.self) == #"["basalEnergyBurned","heartRate"]"#)
        #expect(try JSONDecoder().decode([QuantityType].self, from: encoded) == [.basalEnergyBurned, .heartRate])
        let keyed = try JSONEncoder().encode([QuantityType.stepCount: 1])
        #expect(String(decoding: keyed, as: UTF8.self) == #"{"stepCount":1}"#)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([QuantityType].self, from: Data(#"["mood"]"#.utf8)) }
    }

    @Test func aSampleOfANewTypeValidatesInItsCanonicalUnit() throws {
        let source = SourceDevice(name: "test")
        let now = Date(timeIntervalSinceReferenceDate: 0)
        #expect(try QuantitySample(.runningGroundContactTime, 0.25, .second, at: now, source: source).validate() == 250)
        #expect(throws: SampleValidationError.self) {
            try QuantitySample(.stepCount, -3, at: now, source: source).validate()
        }
    }
}
