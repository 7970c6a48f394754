// One role as a Container App, from the one image; BILLING_ROLE picks the role (the
// image's command), so a revision keeps its role whatever image azd deploys.
//
// The first `azd provision` has no image yet: it starts a placeholder (no probes, since
// the placeholder serves none), and `azd deploy` then puts the real one in (only the
// image: the role, port and settings are already the real app's). Later provisions keep
// the running image (the exists pattern) and set the probes.
param name string
@description('The service name in azure.yaml (tag azd-service-name) and BILLING_ROLE.')
param serviceName string
param location string
param tags object
param exists bool
param environmentId string
param registryServer string
param identityId string
param identityClientId string
param appInsightsName string
param env array
@secure()
@description('The API key the initiator accepts, kept as the app secret api-keys (empty: none).')
param apiKey string = ''
@description('Whether the app takes HTTP requests from the internet (only the initiator).')
param external bool
param minReplicas int
param maxReplicas int

@description('Queues whose depth scales the app (KEDA azure-queue, read as the app\'s identity); none: it scales on HTTP requests.')
param scaleQueues array = []
@description('Messages waiting per replica on any one of those queues.')
param scaleQueueLength int = 64
param storageAccountName string = ''
@description('Concurrent HTTP requests per replica, when it scales on HTTP.')
param httpConcurrentRequests int = 20

@description('Where the role answers liveness and readiness probes (the initiator on its API port, the workers on BILLING_HEALTH_PORT).')
param healthPort int = 8000

var placeholderImage = 'mcr.microsoft.com/azuredocs/containerapps-helloworld:latest'

module fetchImage 'fetch-image.bicep' = {
  name: '${serviceName}-fetch-image'
  params: { exists: exists, name: name }
}

var runningImage = empty(fetchImage.outputs.containers) ? '' : fetchImage.outputs.containers[0].image
var placeholder = empty(runningImage)

resource appInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: appInsightsName
}

// A secret passed in a plain array parameter would show in the deployment's history.
var apiKeySecret = empty(apiKey) ? [] : [ { name: 'api-keys', value: apiKey } ]

// The port the initiator listens on, also while the placeholder (which listens on 80)
// runs: `azd deploy` changes only the image, so the ingress must already be right.
var ingress = {
  external: true
  targetPort: 8000
  transport: 'auto'
  allowInsecure: false
}

var scalesOnHttp = empty(scaleQueues)
var httpRules = [
  {
    name: 'http'
    http: { metadata: { concurrentRequests: string(httpConcurrentRequests) } }
  }
]

var queueRules = [for q in scaleQueues: {
  name: 'depth-${q}'
  azureQueue: {
    accountName: storageAccountName
    queueName: q
    queueLength: scaleQueueLength
    identity: identityId
  }
}]

var probes = [
  {
    type: 'Liveness'
    httpGet: { path: '/healthz', port: healthPort }
    initialDelaySeconds: 10
    periodSeconds: 30
    failureThreshold: 3
  }
  {
    // Stricter than liveness: storage or the warehouse out, or few descriptors to spare.
    type: 'Readiness'
    httpGet: { path: '/readyz', port: healthPort }
    initialDelaySeconds: 3
    periodSeconds: 10
    failureThreshold: 3
  }
]

resource app 'Microsoft.App/containerApps@2025-07-01' = {
  name: name
  location: location
  tags: union(tags, { 'azd-service-name': serviceName })
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: { '${identityId}': {} }
  }
  properties: {
    managedEnvironmentId: environmentId
    workloadProfileName: 'Consumption'
    configuration: {
      activeRevisionsMode: 'Single'
      secrets: concat(apiKeySecret, [ { name: 'appinsights', value: appInsights.properties.ConnectionString } ])
      registries: [ { server: registryServer, identity: identityId } ]
      ingress: external ? ingress : null
    }
    template: {
      containers: [
        {
          name: serviceName
          image: placeholder ? placeholderImage : runningImage
          env: concat(env, external ? [] : [ { name: 'BILLING_HEALTH_PORT', value: string(healthPort) } ], [
            { name: 'BILLING_ROLE', value: serviceName }
            { name: 'OTEL_SERVICE_NAME', value: serviceName } // Application Insights' cloud role name
            { name: 'AZURE_CLIENT_ID', value: identityClientId }
            { name: 'APPLICATIONINSIGHTS_CONNECTION_STRING', secretRef: 'appinsights' }
          ])
          resources: { cpu: json('0.5'), memory: '1Gi' }
          probes: placeholder ? [] : probes
        }
      ]
      scale: {
        minReplicas: minReplicas
        maxReplicas: maxReplicas
        cooldownPeriod: 300
        pollingInterval: 30
        rules: scalesOnHttp ? httpRules : queueRules
      }
    }
  }
}

output name string = app.name
output url string = external ? 'https://${app.properties.configuration.ingress.fqdn}' : ''
