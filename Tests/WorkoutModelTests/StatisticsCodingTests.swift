import Foundation
import Testing
import WorkoutModel

/// Statistics keyed by quantity type encode as a JSON object.
@Suite("Model: statistics in JSON")
struct StatisticsCodingTests {
    @Test func statisticsKeyedByTypeEncodeAsAJSONObject() throws {
        let stats = Statistics(
            quantityType: .heartRate, start: Date(timeIntervalSinceReferenceDate: 0),
            end: Date(timeIntervalSinceReferenceDate: 60), average: Quantity(140, .countPerMinute), duration: 60)
        let data = try JSONEncoder().encode([QuantityType.heartRate: stats])
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        #expect(object?["heartRate"] != nil)
        #expect(try JSONDecoder().decode([QuantityType: Statistics].self, from: data) == [.heartRate: stats])
    }
}
