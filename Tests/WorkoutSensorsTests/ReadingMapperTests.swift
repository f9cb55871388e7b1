import Foundation
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutSensors

/// Decodes `bytes` with `wire`'s decoder and maps the readings as arriving at `arrival`.
private func map(
    _ bytes: [UInt8], _ wire: SensorProtocol, arrival: Date, leg: WorkoutActivityType?, mapper: inout ReadingMapper
) -> RecordedInput {
    var decoder = wire.makeDecoder()
    var readings: [SensorReading] = []
    decoder.decode(bytes, into: &readings)
    var input = RecordedInput()
    mapper.map(readings, arrival: arrival, leg: leg, receiver: 0, into: &input)
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
        mapper.map(readings, arrival: at(6), leg: .transition, receiver: 0, into: &input)
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
        mapper.map(readings, arrival: at(3), leg: .cycling, receiver: 0, into: &input)
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
        mapper.map(readings, arrival: at(0), leg: .cycling, receiver: 0, into: &input)
        readings = []
        decoder.decode(page(wheelTime: 1024, revolutions: 104), into: &readings)
        mapper.map(readings, arrival: at(1), leg: .cycling, receiver: 0, into: &input)
        let distance = input.samples.filter { $0.type == .distanceCycling }
        #expect(distance.count == 1)
        #expect(abs((distance.first?.quantity.value ?? 0) - 4 * 2.105) < 1e-9)
        #expect(distance.first?.source.identifier == "ant:121:102")
        // A gap: the sensor kept counting while unplugged; nothing is invented across it.
        decoder.connectionLost()
        mapper.connectionLost(.ant, receiver: 0)
        input = RecordedInput()
        for (second, revolutions) in [(61, 400), (62, 404)] {
            readings = []
            decoder.decode(page(wheelTime: (second * 1024) & 0xFFFF, revolutions: revolutions), into: &readings)
            mapper.map(readings, arrival: at(Double(second)), leg: .cycling, receiver: 0, into: &input)
        }
        let after = input.samples.filter { $0.type == .distanceCycling }
        #expect(after.allSatisfy { $0.start >= at(61) })
        let total: Double = after.map(\.quantity.value).reduce(0, +)
        #expect(abs(total - 4 * 2.105) < 1e-9)
    }

    /// Two ANT sticks (two ANT ports of one recording): the foot pod's stick is unplugged; the wheel heard by the
    /// other stick keeps its running total, so its next page counts in full (only the lost port's totals re-base).
    @Test func anANTDisconnectForgetsOnlyThatPortsTotals() throws {
        var mapper = ReadingMapper()
        var bike = ANTDecoder()
        var pod = ANTDecoder()
        var input = RecordedInput()
        func feed(_ decoder: inout ANTDecoder, _ bytes: [UInt8], at second: Double, receiver: Int) {
            var readings: [SensorReading] = []
            decoder.decode(bytes, into: &readings)
            mapper.map(readings, arrival: at(second), leg: .cycling, receiver: receiver, into: &input)
        }
        func wheel(_ second: Int, _ revolutions: Int) -> [UInt8] {
            ANT.broadcast(
                channel: 1,
                ANT.speedCadencePage(
                    crankTime: 0, crankRevolutions: 0, wheelTime: (second * 1024) & 0xFFFF,
                    wheelRevolutions: revolutions))
        }
        feed(
            &bike, ANT.channelID(channel: 1, deviceNumber: 102, type: .bikeSpeedCadence) + wheel(0, 100), at: 0,
            receiver: 0)
        feed(
            &pod,
            ANT.channelID(channel: 3, deviceNumber: 104, type: .footPod)
                + ANT.broadcast(channel: 3, ANT.footPodPage(time: 0, distance: 10, speed: 3, strides: 0)),
            at: 0.5, receiver: 1)
        feed(&bike, wheel(1, 104), at: 1, receiver: 0)
        // The foot pod's stick (the second ANT port) is unplugged.
        pod.connectionLost()
        mapper.connectionLost(.ant, receiver: 1)
        feed(&bike, wheel(2, 108), at: 2, receiver: 0)
        let distance = sum(input.samples, .distanceCycling)
        // 8 revolutions of a 2.105 m wheel: the second 4 were lost when every ANT port's totals were forgotten.
        #expect(abs(distance - 8 * 2.105) < 1e-9, "wheel distance \(distance) m")
    }
}

/// A decoder per protocol kept across chunks, as the recorder keeps one per port.
private struct Ports {
    var decoders: [SensorProtocol: any SensorDecoder] = [:]

    mutating func map(
        _ bytes: [UInt8], _ wire: SensorProtocol, arrival: Date, leg: WorkoutActivityType?, mapper: inout ReadingMapper
    ) -> RecordedInput {
        var decoder = decoders[wire] ?? wire.makeDecoder()
        var readings: [SensorReading] = []
        decoder.decode(bytes, into: &readings)
        decoders[wire] = decoder
        var input = RecordedInput()
        mapper.map(readings, arrival: arrival, leg: leg, receiver: 0, into: &input)
        return input
    }
}

private func sum(_ samples: [QuantitySample], _ type: QuantityType) -> Double {
    samples.filter { $0.type == type }.map(\.quantity.value).reduce(0, +)
}

/// A CSC measurement (0x2A5B) with wheel revolutions and the wheel event time (1/1024 s).
private func csc(revolutions: UInt32, time: Int) -> [UInt8] {
    [0x01] + le32(revolutions) + le16(time)
}

/// Readings of several sensors and radios mapped together, chunk by chunk as the recorder reads them.
extension ReadingMapperTests {
    /// One checksum-valid watch line with a bogus time (a microcontroller's `millis() - start` underflowing a
    /// 32-bit counter: 4 294 966 296 ms) does not move the watch's clock: a later length keeps its own date.
    @Test func oneBogusWatchTimeDoesNotShiftEveryLaterWatchDate() throws {
        var mapper = ReadingMapper(lapLength: 25)
        var ports = Ports()
        _ = ports.map(
            WatchLink.strokes(endMilliseconds: 5000, durationMilliseconds: 5000, count: 4), .watch, arrival: at(5),
            leg: .swimming, mapper: &mapper)
        _ = ports.map(
            WatchLink.strokes(endMilliseconds: 4_294_966_296, durationMilliseconds: 1000, count: 1), .watch,
            arrival: at(6), leg: .swimming, mapper: &mapper)
        let length = ports.map(
            WatchLink.length(endMilliseconds: 30_000, durationMilliseconds: 25_000, kind: .active, style: .freestyle, strokes: 12),
            .watch, arrival: at(30), leg: .swimming, mapper: &mapper)
        let end = try #require(length.events.first?.end)
        #expect(abs(end.timeIntervalSince(at(30))) < 1, "length ends \(end.timeIntervalSince(origin)) s after the start")
    }

    /// A foot pod worn on the bike (it stays on the shoe in triathlon) measures running distance, which the
    /// bike leg does not collect: the bike leg's GPS distance stays on.
    @Test func aFootPodDoesNotSwitchOffTheBikeLegsGPSDistance() throws {
        var mapper = ReadingMapper()
        var ports = Ports()
        var input = RecordedInput()
        func add(_ more: RecordedInput) {
            input.samples += more.samples
            input.route += more.route
        }
        add(ports.map(ANT.channelID(channel: 3, deviceNumber: 104, type: .footPod), .ant, arrival: at(0), leg: .cycling, mapper: &mapper))
        for second in 0..<6 {
            let t = Double(second)
            // The foot pod's page (the feet barely move while pedalling: its total stays).
            add(
                ports.map(
                    ANT.broadcast(channel: 3, ANT.footPodPage(time: t, distance: 12, speed: 0, strides: 7)), .ant,
                    arrival: at(t + 0.9), leg: .cycling, mapper: &mapper))
            // GPS: 10 m a second.
            add(ports.map(rmc(t, north: 10 * t), .nmea, arrival: at(t + 0.95), leg: .cycling, mapper: &mapper))
        }
        #expect(input.route.count == 6)
        let cycling = sum(input.samples, .distanceCycling)
        // Five steps of 10 m.
        #expect(abs(cycling - 50) < 1, "bike-leg distance \(cycling) m; samples \(input.samples.map { "\($0.type.rawValue) \($0.quantity.value)" })")
    }

    /// A dual ANT+/BLE speed sensor heard twice (by the ANT stick and, tunnelled, by the watch): the wheel's
    /// 20 turns count once, not once per radio.
    @Test func oneWheelHeardOverTwoRadiosCountsItsDistanceOnce() throws {
        var mapper = ReadingMapper()
        var ports = Ports()
        var samples: [QuantitySample] = []
        samples += ports.map(
            ANT.channelID(channel: 1, deviceNumber: 102, type: .bikeSpeedCadence), .ant, arrival: at(0), leg: .cycling,
            mapper: &mapper
        ).samples
        for second in 0...5 {
            let t = Double(second)
            let revolutions = 100 + 4 * second
            samples += ports.map(
                ANT.broadcast(
                    channel: 1,
                    ANT.speedCadencePage(
                        crankTime: 0, crankRevolutions: 0, wheelTime: (second * 1024) & 0xFFFF,
                        wheelRevolutions: revolutions)), .ant, arrival: at(t + 0.5), leg: .cycling, mapper: &mapper
            ).samples
            samples += ports.map(
                WatchLink.gatt(
                    milliseconds: second * 1000, characteristic: GATT.cscMeasurement,
                    payload: csc(revolutions: UInt32(revolutions), time: (second * 1024) & 0xFFFF)), .watch,
                arrival: at(t + 0.6), leg: .cycling, mapper: &mapper
            ).samples
        }
        let distance = sum(samples, .distanceCycling)
        // 20 revolutions of a 2.105 m wheel.
        #expect(abs(distance - 20 * 2.105) < 0.01, "distance \(distance) m from \(Set(samples.map(\.source.name)))")
    }

    /// Several pages of one foot pod read in one chunk (a busy machine, a USB buffer), all with the chunk's
    /// arrival time, at a steady pace (equal increments): every increment counts in the workout, none is
    /// dropped as a duplicate.
    @Test func severalFootPodPagesInOneChunkAllCountInTheWorkout() throws {
        var mapper = ReadingMapper()
        var ports = Ports()
        func page(_ second: Double, _ metres: Double) -> [UInt8] {
            ANT.broadcast(channel: 3, ANT.footPodPage(time: second, distance: metres, speed: 3, strides: Int(second)))
        }
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .running, locationType: .outdoor), clock: ManualClock(at(0)))
        try session.start(at: at(0))
        var samples = ports.map(
            ANT.channelID(channel: 3, deviceNumber: 104, type: .footPod) + page(1, 10), .ant, arrival: at(1),
            leg: .running, mapper: &mapper
        ).samples
        samples += ports.map(page(2, 13), .ant, arrival: at(2), leg: .running, mapper: &mapper).samples
        // Three pages (seconds 3, 4, 5: 3 m each) read together at 5.1 s.
        samples += ports.map(page(3, 16) + page(4, 19) + page(5, 22), .ant, arrival: at(5.1), leg: .running, mapper: &mapper)
            .samples
        let mapped = sum(samples, .distanceWalkingRunning)
        let report = try session.builder.add(samples)
        try session.stop(at: at(6))
        let recorded = session.builder.snapshot(at: at(6)).statistics[.distanceWalkingRunning]?.sum?.value ?? 0
        #expect(mapped == 12)
        #expect(
            recorded == 12,
            "recorded \(recorded) m of \(mapped) m; dropped \(report.dropped); distance samples \(samples.filter { $0.type == .distanceWalkingRunning }.map { "\($0.start.timeIntervalSince(origin))...\($0.end.timeIntervalSince(origin)) \($0.quantity.value)" })"
        )
    }

    /// The watch measured the first transition and then went away: in the second transition GPS, the only
    /// source left, measures the distance.
    @Test func gpsMeasuresTransitionsAgainOnceTheWatchIsGone() throws {
        var mapper = ReadingMapper()
        var ports = Ports()
        let t1 = ports.map(
            WatchLink.distance(endMilliseconds: 100_000, durationMilliseconds: 1000, meters: 1.5), .watch, arrival: at(100),
            leg: .transition, mapper: &mapper)
        #expect(sum(t1.samples, .distanceWalkingRunning) == 1.5)
        mapper.connectionLost(.watch, receiver: 0)
        // Twenty minutes later, in T2: GPS fixes 2 m apart.
        var samples: [QuantitySample] = []
        for second in 1300..<1306 {
            let t = Double(second)
            samples += ports.map(
                rmc(t, north: 2 * (t - 1300)), .nmea, arrival: at(t + 0.5), leg: .transition, mapper: &mapper
            ).samples
        }
        let distance = sum(samples, .distanceWalkingRunning)
        #expect(abs(distance - 10) < 0.5, "T2 distance \(distance) m")
    }

    /// Two tunnelled heart-rate values a second apart read in one chunk keep the watch's own instants (not
    /// both the chunk's arrival).
    @Test func tunnelledHeartRateKeepsTheWatchsTime() throws {
        var mapper = ReadingMapper()
        var ports = Ports()
        // Anchor the watch clock: a stroke count at 1000 ms arriving at 1.0 s.
        _ = ports.map(
            WatchLink.strokes(endMilliseconds: 1000, durationMilliseconds: 1000, count: 1), .watch, arrival: at(1),
            leg: .cycling, mapper: &mapper)
        let input = ports.map(
            WatchLink.gatt(milliseconds: 2000, characteristic: GATT.heartRateMeasurement, payload: [0x00, 150])
                + WatchLink.gatt(milliseconds: 3000, characteristic: GATT.heartRateMeasurement, payload: [0x00, 150]),
            .watch, arrival: at(3.2), leg: .cycling, mapper: &mapper)
        let dates = input.samples.filter { $0.type == .heartRate }.map { $0.start.timeIntervalSince(origin) }
        #expect(dates == [2, 3], "heart-rate dates \(dates)")
    }
}
