package com.spectrayan.spector.cli;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.codeUnits;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.contract.Environment;
import com.tngtech.archunit.core.domain.JavaAccess;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaCodeUnit;
import com.tngtech.archunit.core.domain.JavaMethod;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The layering of DESIGN.md section 2 over every module's production classes (this module sees
 * them all): no Spring or Reactor Netty anywhere, each core module depends only on the modules its
 * row names, and no module reaches into another's {@code internal} package.
 */
final class ArchitectureTest {
    private static final String ROOT = "com.spectrayan.spector";
    private static final String UPLINK = ROOT + ".uplink";
    private static final String CLUSTER = ROOT + ".cluster";

    /**
     * Every type {@code spector-cluster} publishes, each with a caller in another module. A type
     * used only by its own package is package-private; adding one here widens the surface, so it
     * goes with a line in docs/internal/COMPONENTS.md.
     */
    private static final Set<String> CLUSTER_PUBLIC_TYPES = Set.of(
            "gateway.BodyChunks", // a relayed exchange's read-ahead holds its body's chunks as the replay copy does
            "gateway.CodecRemoval", // the gateway's upgrade splice takes codecs out the same way
            "gateway.DecodedHeaders",
            "gateway.ForwardRequest",
            "gateway.ForwardingHeaders", // the forwarding facts on a forwarded and a relayed request alike
            "gateway.ForwardResponse",
            "gateway.ForwarderMetrics",
            "gateway.ForwarderSpec",
            "gateway.GatewayForwarder",
            "gateway.GatewayForwarder$Exchange",
            "gateway.HeadBuffers",
            "gateway.PinnedTarget",
            "gateway.PinnedTarget$Fallback",
            "gateway.PinnedTarget$Next",
            "gateway.ReplayBudget", // relayed bodies read first reserve from it as forwarded ones do
            "gateway.RequestBody",
            "gateway.RequestBody$Consumer",
            "gateway.ResponseSink",
            "gateway.ResponseSplice", // its limits (MIN_LENGTH, SLICE) are the client side's to test
            "gateway.TransportSpec",
            "gateway.UpstreamHttpTransport",
            "gateway.UpstreamHttpTransport$Listener",
            "routing.CellRing",
            "routing.CellRing$Source",
            "routing.KetamaRing",
            "routing.OwnershipResolver",
            "routing.PublishedRing",
            "routing.PublishedRing$Stored",
            "routing.RedisRouting",
            "routing.Resolution",
            "routing.Resolution$Level",
            "routing.RingMetrics",
            "routing.RouteEntry",
            "routing.RouteInvalidation",
            "routing.RoutingCache",
            "routing.RoutingKey",
            "routing.RoutingKeyExtractor",
            "routing.RoutingMetrics",
            "routing.UplinkHolders",
            "routing.UplinkHolders$Holder",
            "routing.WaterfallRoutingResolver",
            "routing.WaterfallRoutingResolver$Builder");

    private static final List<String> MODULES =
            List.of("contract", "cluster", "uplink", "gateway", "worker", "owner", "cli");

    private static JavaClasses classes;

    @BeforeAll
    static void importClasses() {
        classes = new ClassFileImporter()
                .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages(ROOT);
    }

    @Test
    void imported_theModulesThatHaveCode() {
        for (String module : List.of("contract", "cluster", "cli")) {
            assertThat(classes.stream()
                            .filter(c -> c.getPackageName().startsWith(ROOT + "." + module))
                            .count())
                    .as("classes of %s imported (a rule over no class proves nothing)", module)
                    .isPositive();
        }
    }

    @Test
    void noModule_dependsOnSpringOrReactorNetty() {
        noClasses()
                .that()
                .resideInAPackage(ROOT + "..")
                .should()
                .dependOnClassesThat()
                .resideInAnyPackage("org.springframework..", "reactor.netty..")
                .because("DESIGN.md section 2: the product is built on Netty directly")
                .check(classes);
    }

    @Test
    void contract_dependsOnNoOtherModule() {
        moduleMayNotUse("contract", "cluster", "uplink", "gateway", "worker", "owner", "cli");
        noClasses()
                .that()
                .resideInAPackage(ROOT + ".contract..")
                .should()
                .dependOnClassesThat()
                .resideInAnyPackage("io.netty..", "io.lettuce..", "com.github.benmanes..")
                .because("the contract depends on Jackson only")
                .check(classes);
    }

    @Test
    void cluster_dependsOnlyOnTheContract() {
        moduleMayNotUse("cluster", "uplink", "gateway", "worker", "owner", "cli");
    }

    @Test
    void uplink_ownerAndWorker_stayOutOfTheProcessesAboveThem() {
        moduleMayNotUse("uplink", "gateway", "worker", "owner", "cli");
        moduleMayNotUse("owner", "uplink", "gateway", "worker", "cli");
        moduleMayNotUse("worker", "gateway", "owner", "cli");
        moduleMayNotUse("gateway", "worker", "owner", "cli");
    }

    @Test
    void internalPackages_areUsedOnlyByTheirOwnModule() {
        for (String module : MODULES) {
            noClasses()
                    .that()
                    .resideOutsideOfPackage(ROOT + "." + module + "..")
                    .should()
                    .dependOnClassesThat()
                    .resideInAPackage(ROOT + "." + module + "..internal..")
                    .allowEmptyShould(true)
                    .because("a module's internals may change at any time")
                    .check(classes);
        }
    }

    /** The uplink's internals are real (the rule above is not vacuous for it), and no other module reaches them. */
    @Test
    void uplinkInternals_areUsedByNoOtherModule() {
        assertThat(classes.stream().filter(c -> c.getPackageName().startsWith(UPLINK + ".internal")))
                .as("classes of the uplink's internal packages imported (a rule over no class proves nothing)")
                .isNotEmpty();
        noClasses()
                .that()
                .resideOutsideOfPackage(UPLINK + "..")
                .should()
                .dependOnClassesThat()
                .resideInAPackage(UPLINK + ".internal..")
                .because("uplink.internal may change at any time; gateway, worker and cli use the uplink's nouns")
                .check(classes);
    }

    /** The uplink's public API names no internal type: what other modules may use is what it publishes. */
    @Test
    void uplinkPublicApi_namesNoInternalType() {
        codeUnits()
                .that()
                .areDeclaredInClassesThat()
                .resideInAPackage(UPLINK + "..")
                .and()
                .areDeclaredInClassesThat()
                .resideOutsideOfPackage(UPLINK + ".internal..")
                .and()
                .areDeclaredInClassesThat()
                .arePublic()
                .and()
                .arePublic()
                .should(nameNoTypeOf(UPLINK + ".internal"))
                .because("a public signature that names an internal type would pull other modules into it")
                .check(classes);
    }

    /** The cluster publishes its nouns and nothing else: the forwarder's and the router's pieces stay package-private. */
    @Test
    void clusterPublicTypes_areItsNouns() {
        Set<String> published = classes.stream()
                .filter(c -> c.getPackageName().startsWith(CLUSTER + "."))
                .filter(ArchitectureTest::isEffectivelyPublic)
                .map(c -> c.getName().substring(CLUSTER.length() + 1))
                .collect(Collectors.toCollection(TreeSet::new));
        assertThat(published)
                .as("public types of spector-cluster (a new one is a decision: CLUSTER_PUBLIC_TYPES and COMPONENTS.md)")
                .containsExactlyInAnyOrderElementsOf(CLUSTER_PUBLIC_TYPES);
    }

    /**
     * Every process's {@code main} sets Netty's and its logging's properties before anything else:
     * the allocator reads them once, when its class loads, and JBoss Logging at its first line
     * ({@code Environment.processDefaults}; issue 14).
     */
    @Test
    void everyMain_setsItsProcessDefaultsFirst() {
        List<JavaMethod> mains = classes.stream()
                .flatMap(c -> c.getMethods().stream())
                .filter(m -> m.getName().equals("main")
                        && m.getModifiers().containsAll(Set.of(JavaModifier.PUBLIC, JavaModifier.STATIC))
                        && m.getRawParameterTypes().size() == 1)
                .toList();
        assertThat(mains)
                .extracting(m -> m.getOwner().getSimpleName())
                .contains("SpectorCli", "GatewayMain", "GatewayTraining", "OwnerMain", "WorkerMain");
        for (JavaMethod main : mains) {
            JavaAccess<?> first = main.getAccessesFromSelf().stream()
                    .min(Comparator.comparingInt(JavaAccess::getLineNumber))
                    .orElseThrow();
            assertThat(first.getTarget().getFullName())
                    .as("the first call of %s", main.getFullName())
                    .isEqualTo(Environment.class.getName() + ".processDefaults()");
        }
    }

    /**
     * No public signature names a type other modules cannot see: a public method returning or
     * taking a package-private type is a surface narrowed halfway.
     */
    @Test
    void publicApi_namesOnlyPublicTypes() {
        codeUnits()
                .that()
                .areDeclaredInClassesThat()
                .resideInAPackage(ROOT + "..")
                .and()
                .arePublic()
                .should(nameOnlyPublicTypesOf(ROOT))
                .because("a caller in another package could not name what the signature hands it")
                .check(classes);
    }

    /** Answers whether a class and every class around it are public. */
    private static boolean isEffectivelyPublic(JavaClass c) {
        if (!c.getModifiers().contains(JavaModifier.PUBLIC) || c.isAnonymousClass() || c.isLocalClass()) {
            return false;
        }
        return c.getEnclosingClass().map(ArchitectureTest::isEffectivelyPublic).orElse(true);
    }

    /**
     * A public method or constructor of an effectively public class whose return and parameter
     * types, where they are ours ({@code root}), are effectively public too.
     */
    private static ArchCondition<JavaCodeUnit> nameOnlyPublicTypesOf(String root) {
        return new ArchCondition<>("name only public types of " + root) {
            @Override
            public void check(JavaCodeUnit unit, ConditionEvents events) {
                if (!isEffectivelyPublic(unit.getOwner())) {
                    return;
                }
                List<JavaClass> named = new ArrayList<>(unit.getRawParameterTypes());
                named.add(unit.getRawReturnType());
                for (JavaClass type : named) {
                    JavaClass base = type.isArray() ? type.getBaseComponentType() : type;
                    if (base.getPackageName().startsWith(root) && !isEffectivelyPublic(base)) {
                        events.add(SimpleConditionEvent.violated(
                                unit, unit.getFullName() + " names the non-public " + base.getName()));
                    }
                }
            }
        };
    }

    /** A public method or constructor whose return and parameter types are all outside {@code pkg}. */
    private static ArchCondition<JavaCodeUnit> nameNoTypeOf(String pkg) {
        return new ArchCondition<>("name no type of " + pkg) {
            @Override
            public void check(JavaCodeUnit unit, ConditionEvents events) {
                List<JavaClass> named = new ArrayList<>(unit.getRawParameterTypes());
                named.add(unit.getRawReturnType());
                for (JavaClass type : named) {
                    JavaClass base = type.isArray() ? type.getBaseComponentType() : type;
                    if (base.getPackageName().startsWith(pkg)) {
                        events.add(
                                SimpleConditionEvent.violated(unit, unit.getFullName() + " names " + base.getName()));
                    }
                }
            }
        };
    }

    private static void moduleMayNotUse(String module, String... others) {
        String[] packages = new String[others.length];
        for (int i = 0; i < others.length; i++) {
            packages[i] = ROOT + "." + others[i] + "..";
        }
        noClasses()
                .that()
                .resideInAPackage(ROOT + "." + module + "..")
                .should()
                .dependOnClassesThat()
                .resideInAnyPackage(packages)
                .because("DESIGN.md section 2 draws " + module + "'s dependencies")
                .allowEmptyShould(true) // modules filled by later issues hold no classes yet
                .check(classes);
    }
}
