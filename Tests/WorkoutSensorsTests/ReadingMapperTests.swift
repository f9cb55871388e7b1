import Foundation
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutSensors

private let origin = Date(timeIntervalSinceReferenceDate: 800_000_000)
private func at(_ seconds: Double) -> Date { origin.addingTimeInterval(seconds) }

/// Decodes `bytes` with `wire`'s decoder and maps the readings as arriving at `arrival`.
private func map(
    _ bytes: [UInt8], _ wire: SensorProtocol, arrival: Date, leg: WorkoutActivityType?, mapper: inout ReadingMapper
) -> RecordedInput {
    var decoder = wire.makeDecoder()
    var readings: [SensorReading] = []
    decoder.decode(bytes, into: &readings)
    var input = RecordedInput()
    mapper.map(readings, arrival: arrival, leg: leg, into: &input)
    return input
}

@Suite("Reading mapper: decoded readings to samples, lengths, route and buttons")
struct ReadingMapperTests {
    @Test func watchTimesAreAnchoredOnceAndKeepTheirSpacing() throws {
        var mapper = ReadingMapper(lapLength: 25)
        // The first timed line arrives 0.2 s after it happened; later ones late or early: dates follow
        // the watch's clock, not the arrival.
        let first = map(
            textLine("WL1,LEN,30000,30000,A,FR,15"), .watch, arrival: at(30.2), leg: .swimming, mapper: &mapper)
        let second = map(
            textLine("WL1,LEN,58000,28000,A,FR,14") + textLine("WL1,BTN,60000,NEXT"), .watch, arrival: at(61),
            leg: .swimming, mapper: &mapper)
        let length = try #require(first.events.first)
        #expect(length.start == at(0.2) && length.duration == 30)
        #expect(length.metadata[SwimMetadataKey.lengthKind] == .string("active"))
        #expect(length.metadata[SwimMetadataKey.strokes] == .int(15))
        #expect(length.metadata[SwimMetadataKey.strokeStyle] == .string("freestyle"))
        // One pool length of distance and the strokes, over the length.
        #expect(first.samples.map(\.type) == [.distanceSwimming, .swimmingStrokeCount])
        #expect(first.samples.first?.quantity.value == 25)
        #expect(second.events.first?.start == at(30.2))
        #expect(second.buttons.count == 1)
        #expect(second.buttons.first?.button == .next)
        #expect(second.buttons.first?.date == at(60.2))
    }

    @Test func distanceComesFromTheBestSourceOfTheLeg() throws {
        var mapper = ReadingMapper()
        // The watch's own distance in a transition.
        let walk = map(textLine("WL1,DST,5000,1000,1.713"), .watch, arrival: at(5), leg: .transition, mapper: &mapper)
        #expect(walk.samples.count == 1)
        #expect(walk.samples.first?.type == .distanceWalkingRunning)
        #expect(walk.samples.first?.quantity.value == 1.713)
        #expect(walk.samples.first?.start == at(4) && walk.samples.first?.end == at(5))
        // GPS in the same leg only moves its total (the watch measured): no second distance.
        var gps = NMEADecoder()
        var readings: [SensorReading] = []
        gps.decode(
            NMEA.rmc(time: at(5), latitude: 47.9, longitude: 11.3, speed: 1.7, course: 0)
                + NMEA.rmc(time: at(6), latitude: 47.90002, longitude: 11.3, speed: 1.7, course: 0), into: &readings)
        var input = RecordedInput()
        mapper.map(readings, arrival: at(6), leg: .transition, into: &input)
        #expect(input.route.count == 2)
        #expect(input.samples.isEmpty)
        // A pool swim's distance comes from its lengths, not from DST.
        var pool = ReadingMapper(lapLength: 25)
        #expect(map(textLine("WL1,DST,5000,1000,1.1"), .watch, arrival: at(5), leg: .swimming, mapper: &pool).samples.isEmpty)
    }

    @Test func gpsDistanceCountsWhenNothingElseMeasures() throws {
        var mapper = ReadingMapper()
        var gps = NMEADecoder()
        var readings: [SensorReading] = []
        for second in 0..<3 {
            gps.decode(
                NMEA.rmc(
                    time: at(Double(second)), latitude: 47.9 + Double(second) * 0.0001, longitude: 11.3, speed: 11,
                    course: 0), into: &readings)
        }
        var input = RecordedInput()
        mapper.map(readings, arrival: at(3), leg: .cycling, into: &input)
        let distance: Double = input.samples.filter { $0.type == .distanceCycling }.map(\.quantity.value).reduce(0, +)
        // Two steps of 0.0001° of latitude: about 22.2 m.
        #expect(abs(distance - 22.24) < 0.2)
    }

    @Test func antTotalsBecomeIncrementsAndReBaseAfterADisconnect() throws {
        var mapper = ReadingMapper()
        var decoder = ANTDecoder()
        func page(wheelTime: Int, revolutions: Int) -> [UInt8] {
            broadcast(1, le16(0) + le16(0) + le16(wheelTime) + le16(revolutions))
        }
        let setup = channelID(1, number: 102, type: 121)
        var readings: [SensorReading] = []
        decoder.decode(setup + page(wheelTime: 0, revolutions: 100), into: &readings)
        var input = RecordedInput()
        mapper.map(readings, arrival: at(0), leg: .cycling, into: &input)
        readings = []
        decoder.decode(page(wheelTime: 1024, revolutions: 104), into: &readings)
        mapper.map(readings, arrival: at(1), leg: .cycling, into: &input)
        let distance = input.samples.filter { $0.type == .distanceCycling }
        #expect(distance.count == 1)
        #expect(abs((distance.first?.quantity.value ?? 0) - 4 * 2.105) < 1e-9)
        #expect(distance.first?.source.identifier == "ant:121:102")
        // A gap: the sensor kept counting while unplugged; nothing is invented across it.
        decoder.connectionLost()
        mapper.connectionLost(.ant)
        input = RecordedInput()
        for (second, revolutions) in [(61, 400), (62, 404)] {
            readings = []
            decoder.decode(page(wheelTime: (second * 1024) & 0xFFFF, revolutions: revolutions), into: &readings)
            mapper.map(readings, arrival: at(Double(second)), leg: .cycling, into: &input)
        }
        let after = input.samples.filter { $0.type == .distanceCycling }
        #expect(after.allSatisfy { $0.start >= at(61) })
        let total: Double = after.map(\.quantity.value).reduce(0, +)
        #expect(abs(total - 4 * 2.105) < 1e-9)
    }
}
